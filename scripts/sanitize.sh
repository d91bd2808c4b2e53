#!/usr/bin/env bash
# Sanitizer builds: the unit tests under AddressSanitizer + UndefinedBehaviorSanitizer and the
# CPU runtime's tests under ThreadSanitizer. Every report is fatal (halt_on_error), so a
# sanitizer finding fails its test.
#
#   scripts/sanitize.sh [asan|tsan|all] [--fast]
#     asan    every test (ctest) built with ASan + UBSan (--fast: the support, ir, tdl and
#             importers unit tests and the fuzz replays, the part CI runs). With clang this is
#             the fuzzers' tree, build-fuzz/ (scripts/fuzz.sh configures it); without, gcc in
#             build-asan/.
#     tsan    the runtime tests that use only the runtime library (collectives, the CPU
#             backend's kernels, training steps on rank threads) in build-tsan/
#     all     both (default)
#
# Tests that need ../shared or a GPU skip as in the ordinary build.
set -euo pipefail
cd "$(dirname "$0")/.."
what=all fast=0
for a in "$@"; do
  case $a in
    asan | tsan | all) what=$a ;;
    --fast) fast=1 ;;
    *) echo "usage: scripts/sanitize.sh [asan|tsan|all] [--fast]" >&2; exit 2 ;;
  esac
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs=$(nproc)

# The ctest names of the unit tests of tests/<folder> for each folder in $@, leaving out those
# that link a library matching $EXCLUDE (when set).
tests_in() {
  local d
  for d in "$@"; do
    grep '^planner_add_test(' "tests/$d/CMakeLists.txt" |
      { if [ -n "${EXCLUDE:-}" ]; then grep -vE "$EXCLUDE"; else cat; fi; } |
      sed 's/^planner_add_test(\([A-Za-z0-9_]*\).*/\1/'
  done
}

# build_and_test DIR TARGET...: builds the targets (all when none) and runs their tests.
build_and_test() {
  local dir=$1
  shift
  if [ $# -eq 0 ]; then
    cmake --build "$dir" --parallel "$jobs"
    ctest --test-dir "$dir" --output-on-failure --parallel "$jobs"
  else
    cmake --build "$dir" --parallel "$jobs" --target "$@"
    ctest --test-dir "$dir" --output-on-failure --parallel "$jobs" -R "^($(IFS='|'; echo "$*"))\$"
  fi
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
# OpenBLAS's own threads are not instrumented; the runtime's rank threads are what is tested.
export OPENBLAS_NUM_THREADS=1

status=0
if [ "$what" != tsan ]; then
  fuzz_status=0
  scripts/fuzz.sh configure || fuzz_status=$?
  if [ $fuzz_status -eq 0 ]; then
    dir=build-fuzz
  elif [ $fuzz_status -eq 77 ]; then
    dir=build-asan
    cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DPLANNER_SANITIZE=address,undefined >/dev/null
  else
    exit $fuzz_status
  fi
  targets=()
  if [ $fast = 1 ]; then
    mapfile -t targets < <(tests_in support ir tdl importers)
    targets+=(fuzz_replay_onnx_proto fuzz_replay_onnx_text fuzz_replay_topology fuzz_replay_tdl
              fuzz_replay_plan fuzz_replay_costs)
  fi
  echo "ASan + UBSan: ${targets[*]:-every test} in $dir"
  build_and_test "$dir" "${targets[@]}" || status=1
fi
if [ "$what" != asan ]; then
  cmake -S . -B build-tsan "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPLANNER_SANITIZE=thread >/dev/null
  mapfile -t targets < <(EXCLUDE='planner_(analysis|importers|ir)' tests_in runtime)
  echo "TSan: ${targets[*]} in build-tsan"
  build_and_test build-tsan "${targets[@]}" || status=1
fi
exit $status
