#!/usr/bin/env bash
# Runs every search on every shared model (../shared/models) at 8 and 16 GPUs in training mode
# and prints one line per run: search time, predicted step time and peak memory against data
# parallelism, and whether the search's own plan (--no-fallback) is no slower than data
# parallelism; then `planner frontier`'s points: whether its smallest point needs less memory
# than data parallelism and its marked point is --search frontier's plan.
# Usage: scripts/search_all_models.sh [BUDGET_S] [MAX_PROPOSALS] [MODELS...]
set -uo pipefail
cd "$(dirname "$0")/.."
budget=${1:-120} proposals=${2:-200}
shift 2 2>/dev/null || shift $#
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(mlp_8192x4 alexnet vgg16 resnet50 inception_v3 lstm_lm lstm_lm_unrolled gpt2_small bert_base)
dir=../shared/models
[ -d "$dir" ] || { echo "../shared/models is absent"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '%-18s %4s %-9s %9s %12s %12s %12s %12s %s\n' model gpus search time_s step_ms dp_step_ms peak_MiB dp_peak_MiB verdict
for m in "${models[@]}"; do
  for g in 8 16; do
    for s in dp frontier mcmc; do
      start=$(date +%s.%N)
      if /tmp/planner_allmodels plan "$dir/$m.onnx" --gpus "$g" --search "$s" --budget "$budget" --max-proposals "$proposals" \
           --no-fallback --no-progress -o "$tmp/p.json" > "$tmp/out" 2>&1; then
        end=$(date +%s.%N)
        [ "$s" = frontier ] && cp "$tmp/p.json" "$tmp/frontier_plan.json"
        python3 - "$m" "$g" "$s" "$start" "$end" "$tmp/p.json" <<'PY'
import json, sys
m, g, s, start, end, path = sys.argv[1:7]
t = float(end) - float(start)
p = json.load(open(path))
me, dp = p["predicted"], p["baselines"]["data_parallel"]
ok = "no slower than DP" if me["step_time_s"] <= dp["step_time_s"] * (1 + 1e-9) else "SLOWER than DP"
print(f'{m:<18} {g:>4} {s:<9} {float(t):9.1f} {me["step_time_s"]*1e3:12.3f} {dp["step_time_s"]*1e3:12.3f} '
      f'{me["peak_memory_bytes"]/2**20:12.1f} {dp["peak_memory_bytes"]/2**20:12.1f} {ok}')
PY
      else
        printf '%-18s %4s %-9s %9s %s\n' "$m" "$g" "$s" "-" "failed: $(tail -1 "$tmp/out")"
      fi
    done
    if /tmp/planner_allmodels frontier "$dir/$m.onnx" --gpus "$g" --budget "$budget" --no-progress --csv "$tmp/f.csv" \
         > "$tmp/out" 2>&1 && [ -f "$tmp/frontier_plan.json" ]; then
      python3 - "$m" "$g" "$tmp/f.csv" "$tmp/frontier_plan.json" <<'PY'
import csv, json, sys
m, g, path, plan = sys.argv[1:5]
rows = list(csv.DictReader(open(path)))
pts = [r for r in rows if r["point"] != "data_parallel"]
dp = next(r for r in rows if r["point"] == "data_parallel")
small = min(pts, key=lambda r: int(r["peak_memory_bytes"]))
chosen = [r for r in pts if r["chosen"] == "1"]
p = json.load(open(plan))["predicted"]
smaller = int(small["peak_memory_bytes"]) < int(dp["peak_memory_bytes"])
match = bool(chosen) and abs(float(chosen[0]["step_time_s"]) - p["step_time_s"]) <= 1e-12 * max(1.0, p["step_time_s"]) \
    and int(chosen[0]["peak_memory_bytes"]) == p["peak_memory_bytes"]
print(f'{m:<18} {g:>4} {"points":<9} {len(pts):9d} smallest {int(small["peak_memory_bytes"])/2**20:.1f} MiB vs DP '
      f'{int(dp["peak_memory_bytes"])/2**20:.1f} MiB: {"less" if smaller else "NOT LESS"}; '
      f'marked point {"is" if match else "IS NOT"} --search frontier\'s plan')
PY
    else
      printf '%-18s %4s %-9s %9s %s\n' "$m" "$g" "points" "-" "failed: $(tail -1 "$tmp/out")"
    fi
    rm -f "$tmp/frontier_plan.json"
  done
done
