#!/usr/bin/env bash
# The searches' cost tables against the simulator (issue 18): the frontier points of a shared
# model (../shared/models) at each GPU count named: simulated (the compiled step) / table time
# within [0.85, 1.35] for the chosen point, and for the other points within [0.85, 1.7] up to
# 16 GPUs (two nodes), [0.85, 2.6] beyond (docs/search.md, "Tables against the simulator",
# says why). The upper bounds grow by the wait for the slowest GPU, which the simulated step's
# kernels pay and the tables do not (docs/cost-model.md: (1 + 0.2 n / (n + 1)) / 1.1).
#   table_vs_simulated_test.sh PLANNER MODELS_DIR MODEL GPUS...
# Skips (77) without the model.
set -uo pipefail
planner=$1 models=$2 m=$3
shift 3
[ -f "$models/$m.onnx" ] || { echo "SKIPPED: $models/$m.onnx is absent"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
for g in "$@"; do
  # The plain step (no recomputation, no sharded state): the tables against the simulator.
  if ! "$planner" frontier "$models/$m.onnx" --gpus "$g" --budget 0 --no-progress \
       --recompute none --zero 0 \
       --csv "$tmp/f.csv" > "$tmp/out" 2>&1; then
    echo "$m $g GPUs: frontier failed: $(tail -1 "$tmp/out")"; status=1; continue
  fi
  python3 - "$m" "$g" "$tmp/f.csv" <<'PY' || status=1
import csv, sys
m, g, path = sys.argv[1:4]
rows = [r for r in csv.DictReader(open(path)) if r["point"] != "data_parallel" and r["table_time_s"]]
ratios = [float(r["step_time_s"]) / float(r["table_time_s"]) for r in rows]
chosen = [float(r["step_time_s"]) / float(r["table_time_s"]) for r in rows if r["chosen"] == "1"]
n = int(g)
wait = (1 + 0.2 * n / (n + 1)) / 1.1 if n > 1 else 1.0  # analysis::sync_slowdown, spread 0.2
hi = (1.7 if int(g) <= 16 else 2.6) * wait
top = 1.35 * wait
bad = [x for x in ratios if not 0.85 <= x <= hi] + [x for x in chosen if not 0.85 <= x <= top]
print(f"{m} {g} GPUs: simulated/table {' '.join(f'{x:.3f}' for x in ratios)}"
      + (f", chosen {chosen[0]:.3f}" if chosen else "")
      + (f" OUTSIDE the bounds ([0.85, {hi:.3f}], chosen [0.85, {top:.3f}])" if bad else ""))
sys.exit(1 if bad or not ratios else 0)
PY
done
exit $status
