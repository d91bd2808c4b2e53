#!/usr/bin/env bash
# Checks that every C++ and CUDA source the repository tracks is formatted as the committed
# .clang-format says (clang-format 14, Debian 12's). Prints the files that differ and fails;
# exits 77 (skipped) where clang-format or git (or the .git folder) is missing.
#   scripts/check-format.sh          check
#   scripts/check-format.sh --fix    rewrite the files that differ
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null || ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "SKIPPED: clang-format and a git checkout are needed to check the formatting"
  exit 77
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
differ=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || differ+=("$f")
done
if [ ${#differ[@]} -gt 0 ]; then
  printf '%s\n' "${differ[@]}"
  echo "${#differ[@]} of ${#files[@]} files differ from .clang-format; run scripts/check-format.sh --fix"
  exit 1
fi
echo "all ${#files[@]} files follow .clang-format"
