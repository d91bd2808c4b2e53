#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite; then the fast part of the
# fuzzing and sanitizer checks (docs/fuzzing.md): every fuzz harness replays its seeds and
# regressions and fuzzes for PLANNER_FUZZ_SECONDS (default 15; 0 leaves both checks out), and
# the support, ir, tdl and importers tests run under ASan + UBSan. Without clang the fuzz step
# says so and is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
seconds=${PLANNER_FUZZ_SECONDS:-15}
if [ "$seconds" -gt 0 ]; then
  status=0
  scripts/fuzz.sh ci "$seconds" || status=$?
  if [ $status -eq 77 ]; then
    echo "fuzzing skipped (see above)"
  elif [ $status -ne 0 ]; then
    exit $status
  fi
  scripts/sanitize.sh asan --fast
fi
