#!/usr/bin/env bash
# One meaning of a plan (issue 18): what `planner plan` predicts is what `planner compile`
# writes into manifest.json as `predicted`, obtained by simulating the compiled step programs
# themselves, in total and per rank (the total's step time is the slowest rank's, its peak
# memory the most loaded rank's). Every search and the data-parallel baseline, on one shared
# model at 8 GPUs, in training and in inference. Skips (77) without the model.
#
#   manifest_predicted_test.sh PLANNER MODELS_DIR MODEL
set -uo pipefail
planner=$1 models=$2 m=$3
[ -f "$models/$m.onnx" ] || { echo "SKIPPED: $models/$m.onnx is absent"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
for mode in train infer; do
  for s in dp frontier mcmc megatron data-parallel; do
    # mcmc on a fixed number of proposals, so the test is as fast on any machine.
    extra=()
    [ "$s" = mcmc ] && extra=(--budget 0 --max-proposals 300)
    if ! "$planner" plan "$models/$m.onnx" --gpus 8 --mode "$mode" --search "$s" --no-progress \
         "${extra[@]}" -o "$tmp/p.json" > "$tmp/out" 2>&1; then
      # A plan that does not fit is written all the same (exit 4); anything else fails.
      if [ ! -f "$tmp/p.json" ]; then
        echo "$m $mode $s: plan failed: $(tail -1 "$tmp/out")"; status=1; continue
      fi
    fi
    rm -rf "$tmp/c"
    if ! "$planner" compile "$tmp/p.json" --model "$models/$m.onnx" -o "$tmp/c" > "$tmp/out" 2>&1; then
      echo "$m $mode $s: compile failed: $(tail -1 "$tmp/out")"; status=1; continue
    fi
    python3 - "$m" "$mode" "$s" "$tmp/p.json" "$tmp/c/manifest.json" <<'PY' || status=1
import json, sys
m, mode, s, plan_path, manifest_path = sys.argv[1:6]
plan = json.load(open(plan_path))["predicted"]
man = json.load(open(manifest_path))
pred = man["predicted"]
ranks = [r["predicted"] for r in man["ranks"]]
bad = []
def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-30)
if not close(pred["step_time_s"], plan["step_time_s"]):
    bad.append(f"step {pred['step_time_s']} vs plan {plan['step_time_s']}")
if pred["peak_memory_bytes"] != plan["peak_memory_bytes"]:
    bad.append(f"peak {pred['peak_memory_bytes']} vs plan {plan['peak_memory_bytes']}")
if pred["comm_bytes"] != plan["comm_bytes"]:
    bad.append(f"comm {pred['comm_bytes']} vs plan {plan['comm_bytes']}")
if len(ranks) != man["num_ranks"]:
    bad.append(f"{len(ranks)} ranks with figures of {man['num_ranks']}")
if not close(max(r["step_time_s"] for r in ranks), pred["step_time_s"]):
    bad.append("the total step is not the slowest rank's")
if max(r["peak_memory_bytes"] for r in ranks) != pred["peak_memory_bytes"]:
    bad.append("the total peak is not the most loaded rank's")
print(f"{m} {mode} {s}: plan {plan['step_time_s'] * 1e3:.4f} ms {plan['peak_memory_bytes']} B,"
      f" manifest {pred['step_time_s'] * 1e3:.4f} ms {pred['peak_memory_bytes']} B"
      + (": " + "; ".join(bad) if bad else ""))
sys.exit(1 if bad else 0)
PY
  done
done
exit $status
