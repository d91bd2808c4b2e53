#!/usr/bin/env bash
# Runs one command-line golden case: tests/cli/cases/NAME.t holds a shell command line using
# $PLANNER, $EXAMPLES, $MODELS (../shared/models) and $TMP; NAME.expected holds its combined
# stdout and stderr and a last line "[exit N]". PLANNER_UPDATE_GOLDEN=1 rewrites the expected
# file instead of comparing. A case that uses $MODELS is skipped (exit 77) when they are absent.
set -uo pipefail
case_file=$1 planner=$2 source_dir=$3 models=$4
name=$(basename "$case_file" .t)
expected="${case_file%.t}.expected"
if grep -q '\$MODELS' "$case_file" && [ ! -d "$models" ]; then
  echo "SKIPPED: $name needs ../shared/models, which is absent"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$source_dir"
actual=$(PLANNER="$planner" EXAMPLES=examples MODELS="$models" TMP="$tmp" \
  bash -c "$(grep -v '^#' "$case_file")" 2>&1; echo "[exit $?]")
# Paths that differ between machines are replaced by their variable names.
actual=${actual//$tmp/\$TMP}
actual=${actual//$models/\$MODELS}
# verify's largest errors depend on summation order, so on the BLAS kernel the machine picks
# (OPENBLAS_CORETYPE): the golden keeps the line, the tolerance and the verdict after it, not
# the figures or which tensor holds the largest (the verdict is the bound they are held to).
actual=$(printf '%s\n' "$actual" | sed -E \
  -e 's/^largest error: abs [^;]*; [^ ]* of the tolerance (\([^)]*\)).*$/largest error: [figures vary by BLAS kernel] \1/' \
  -e "s/^(against .*: [0-9]+ outputs), largest error abs [^;]*; [^ ]* of the tolerance (\([^)]*\)).*\$/\1, largest error [figures vary by BLAS kernel] \2/")
if [ "${PLANNER_UPDATE_GOLDEN:-0}" = 1 ]; then
  printf '%s\n' "$actual" > "$expected"
  echo "updated $expected"
  exit 0
fi
if [ ! -f "$expected" ]; then
  echo "missing $expected; run with PLANNER_UPDATE_GOLDEN=1 to create it"
  printf '%s\n' "$actual"
  exit 1
fi
if ! diff -u "$expected" <(printf '%s\n' "$actual"); then
  echo "FAILED: $name differs from $expected (PLANNER_UPDATE_GOLDEN=1 refreshes it)"
  exit 1
fi
