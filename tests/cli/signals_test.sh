#!/usr/bin/env bash
# Every command that writes a file or folder, stopped by SIGINT, SIGTERM and SIGHUP at points
# spread over its run: it dies of the signal (or finishes first), and leaves nothing
# half-written: no temporary `.NAME.tmp-*` or `.NAME.old-*` beside its outputs, no verify folder
# in TMPDIR, and each output either absent or whole (byte for byte what the same command writes
# unstopped).
# Usage: signals_test.sh PLANNER SOURCE_DIR
set -uo pipefail
planner=$(realpath "$1") src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/planner-signals-XXXXXX")
trap 'rm -rf "$work"' EXIT
set -m  # background jobs keep SIGINT (without job control bash starts them ignoring it)
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
failures=0 runs=0 stopped=0

"$planner" generate gpt "$work/tiny.onnx" --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 \
  > /dev/null || { echo "FAIL: generate"; exit 1; }
model=$work/tiny.onnx
"$planner" plan "$model" --gpus 4 --batch 8 --search data-parallel --no-progress \
  -o "$work/base.json" > /dev/null || { echo "FAIL: plan"; exit 1; }

# name | outputs (relative to the run's folder) | command (run in that folder)
cases=(
  "generate|big.onnx|$planner generate gpt big.onnx --layers 6000 --hidden 64 --heads 4 --seq 16 --vocab 128"
  "plan|plan.json trace.json report|$planner plan $model --gpus 8 --batch 8 --search mcmc --max-proposals 400 --no-progress -o plan.json --trace trace.json --report report"
  "frontier|f.csv f.svg|$planner frontier $model --gpus 8 --batch 8 --no-progress --csv f.csv --svg f.svg"
  "simulate|trace.json|$planner simulate $model --gpus 8 --batch 8 --trace trace.json"
  "compile|out|$planner compile $work/base.json --model $model -o out"
  "verify|-|$planner verify $model --gpus 2 --batch 4 --steps 1 --search data-parallel"
)

# Leftovers of an interrupted write in `dir` (recursively) or TMPDIR.
leftovers() {
  find "$1" "$TMPDIR" -mindepth 1 \( -name '.*.tmp-*' -o -name '.*.old-*' -o -name 'planner-verify-*' \) \
    -prune -print 2>/dev/null
}

for spec in "${cases[@]}"; do
  IFS='|' read -r name outputs cmd <<< "$spec"
  # The unstopped run: how long it takes, and its outputs as references.
  ref=$work/ref_$name
  mkdir -p "$ref"
  start=$(date +%s%N)
  (cd "$ref" && $cmd > /dev/null 2>&1) || { echo "FAIL: $name does not run unstopped: $cmd"; failures=$((failures + 1)); continue; }
  total_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  for sig in INT TERM HUP; do
    for frac in 2 10 25 45 70 90; do
      delay_ms=$(( total_ms * frac / 100 + 5 ))
      run=$work/run_${name}_${sig}_$frac
      mkdir -p "$run"
      (cd "$run" && exec $cmd > /dev/null 2>&1) &
      pid=$!
      sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
      kill -s "$sig" "$pid" 2>/dev/null
      { wait "$pid"; } 2> /dev/null
      status=$?
      runs=$((runs + 1))
      want=$((128 + $(kill -l "$sig")))
      if [ "$status" -eq "$want" ]; then
        stopped=$((stopped + 1))
      elif [ "$status" -ne 0 ]; then
        echo "FAIL: $name, SIG$sig at ${delay_ms} ms: exit $status (expected $want, or 0 when it finished first)"
        failures=$((failures + 1))
      fi
      left=$(leftovers "$run")
      if [ -n "$left" ]; then
        echo "FAIL: $name, SIG$sig at ${delay_ms} ms left: $left"
        failures=$((failures + 1))
        rm -rf $left
      fi
      for o in $outputs; do
        [ "$o" = "-" ] || [ ! -e "$run/$o" ] && continue
        # Whole: byte for byte what the unstopped run wrote (the commands are deterministic).
        if ! diff -r -q "$run/$o" "$ref/$o" > /dev/null 2>&1; then
          echo "FAIL: $name, SIG$sig at ${delay_ms} ms: $o differs from the unstopped run's"
          failures=$((failures + 1))
        fi
      done
      rm -rf "$run"
    done
  done
  echo "$name: unstopped ${total_ms} ms; 18 runs stopped at 2-90% of that"
done
echo "$runs runs, $stopped died of the signal, the rest finished first; $failures failures"
[ "$failures" -eq 0 ]
