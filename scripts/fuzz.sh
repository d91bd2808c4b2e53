#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ with clang (ASan + UBSan) into build-fuzz/ and runs them.
#
#   scripts/fuzz.sh NAME|all SECONDS   fuzz each harness for SECONDS, starting from its seed
#                                      corpus; new inputs go to build-fuzz/corpus/NAME and crashes
#                                      to build-fuzz/findings/NAME; prints executions, corpus size
#   scripts/fuzz.sh ci [SECONDS]       CI: replay every seed and regression, then fuzz each
#                                      harness for SECONDS (default 20); fails on any finding
#   scripts/fuzz.sh build              only build the harnesses
#   scripts/fuzz.sh configure          only configure build-fuzz/ (scripts/sanitize.sh builds the
#                                      unit tests in the same tree: one clang ASan + UBSan build)
#
# Harnesses: onnx_proto onnx_text topology tdl plan costs (docs/fuzzing.md). Exits 77 (skip)
# when clang or libFuzzer is missing. FUZZ_JOBS=N runs N harnesses at once (default 1).
# FUZZ_KEEP_GOING=1 (with NAME|all) goes on after a crash (libFuzzer's fork mode), keeping
# every crashing input, to collect the findings of a harness that still has known crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
harnesses=(onnx_proto onnx_text topology tdl plan costs)
usage() { echo "usage: scripts/fuzz.sh NAME|all SECONDS | ci [SECONDS] | build | configure" >&2; exit 2; }
[ $# -ge 1 ] || usage

clangxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$clangxx" ]; then
  echo "skip: clang++ not found (scripts/install-deps.sh installs it)"
  exit 77
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, long) { return 0; }' |
     "$clangxx" -x c++ -fsanitize=fuzzer,address,undefined -o /dev/null - 2>/dev/null; then
  echo "skip: $clangxx cannot link libFuzzer (Debian: libclang-rt-14-dev)"
  exit 77
fi

configure() {
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B build-fuzz "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$clangxx" -DPLANNER_FUZZ=ON -DPLANNER_BUILD_TESTS=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON >/dev/null
}

# Only the libraries the harnesses link are built (no search, codegen, cli or tests).
build() {
  configure
  cmake --build build-fuzz --target fuzzers --parallel "$(nproc)"
}

# The ONNX harness writes each input to a file; crashed runs leave their folders here.
rm -rf build-fuzz/tmp
mkdir -p build-fuzz/tmp
export TMPDIR=$PWD/build-fuzz/tmp

# Every report is fatal and symbolized; LeakSanitizer stays on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# fuzz NAME SECONDS: one libFuzzer session; returns libFuzzer's status.
fuzz() {
  local name=$1 seconds=$2
  local corpus=build-fuzz/corpus/$name findings=build-fuzz/findings/$name
  mkdir -p "$corpus" "$findings"
  touch "build-fuzz/fuzz-$name.log.start"
  local dict=()
  [ -f "fuzz/dict/$name.dict" ] && dict=(-dict="fuzz/dict/$name.dict")
  local log=build-fuzz/fuzz-$name.log status=0 mode=()
  [ "${FUZZ_KEEP_GOING:-0}" = 1 ] && mode=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  # CI fuzzes reproducibly: a fixed seed and a fixed number of runs (capped by the time), so
  # the same tree gives the same inputs on every machine.
  [ -n "${FUZZ_RUNS:-}" ] && mode+=(-seed=1 -runs="$FUZZ_RUNS")
  build-fuzz/fuzz/fuzz_"$name" "$corpus" fuzz/corpus/"$name" "${dict[@]}" "${mode[@]}" \
    -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560 -max_len=16384 -error_exitcode=1 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  local execs corpus_size found
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # Fork mode reports progress lines instead: "#123456: cov: ... exec/s ...".
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\): cov.*/\1/p' "$log" | tail -1)
  corpus_size=$(find "$corpus" -type f | wc -l)
  found=$(find "$findings" -type f -newer "$log.start" 2>/dev/null | wc -l)
  printf '%-10s %6ss  executions %10s  corpus %6s files  ' "$name" "$seconds" "${execs:-?}" "$corpus_size"
  if [ $status -eq 0 ] && [ "$found" -eq 0 ]; then
    echo "no finding"
  else
    echo "FINDINGS: $found new file(s) in $findings (status $status; log $log)"
    grep -oE "ERROR: (AddressSanitizer|libFuzzer|UndefinedBehaviorSanitizer|LeakSanitizer): [a-z -]+|runtime error: .{0,100}|fuzz property violated: .{0,100}|what\(\): .{0,100}" "$log" | sort | uniq -c | sort -rn | head -5 || true
    status=1
  fi
  rm -f "$log.start"
  return $status
}

# replay NAME: the seeds and every regression once each (open findings skipped).
replay() {
  local name=$1 inputs=() f
  local open_list
  open_list=$(sed 's/#.*//; s/[[:space:]]*$//' fuzz/regressions/open.txt)
  while IFS= read -r f; do
    grep -qxF -- "$name/$(basename "$f")" <<<"$open_list" || inputs+=("$f")
  done < <(find fuzz/corpus/"$name" fuzz/regressions/"$name" -type f 2>/dev/null | sort)
  local log=build-fuzz/replay-$name.log
  if ! build-fuzz/fuzz/fuzz_"$name" -rss_limit_mb=2560 "${inputs[@]}" >"$log" 2>&1; then
    echo "$name: a seed or regression fails; see $log"
    tail -30 "$log"
    return 1
  fi
  echo "$name: ${#inputs[@]} seeds and regressions replayed"
}

mode=$1
case $mode in
  configure) configure ;;
  build) build ;;
  ci)
    seconds=${2:-20}
    export FUZZ_RUNS=${FUZZ_RUNS:-20000}
    build
    failed=0
    for h in "${harnesses[@]}"; do replay "$h" || failed=1; done
    for h in "${harnesses[@]}"; do fuzz "$h" "$seconds" || failed=1; done
    exit $failed
    ;;
  *)
    [ $# -eq 2 ] || usage
    seconds=$2
    names=("${harnesses[@]}")
    if [ "$mode" != all ]; then
      [[ " ${harnesses[*]} " == *" $mode "* ]] || { echo "unknown harness '$mode'; expected all or one of: ${harnesses[*]}" >&2; exit 2; }
      names=("$mode")
    fi
    build
    failed=0
    jobs=${FUZZ_JOBS:-1}
    pids=()
    for h in "${names[@]}"; do
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
      fuzz "$h" "$seconds" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    exit $failed
    ;;
esac
