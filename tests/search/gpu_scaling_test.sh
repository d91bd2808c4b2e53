#!/usr/bin/env bash
# More GPUs are never predicted slower (issue 18): a shared model (../shared/models) planned in
# training mode on 8, 16, 32 and 64 GPUs of the H100 preset with each search named; the predicted
# step time of each count must be at most that of the count before.
#   gpu_scaling_test.sh PLANNER MODELS_DIR MODEL SEARCH...
# Skips (77) without the model.
set -uo pipefail
planner=$1 models=$2 m=$3
shift 3
[ -f "$models/$m.onnx" ] || { echo "SKIPPED: $models/$m.onnx is absent"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
{
  for s in "$@"; do
    line="$m $s:" last=""
    for g in 8 16 32 64; do
      if ! "$planner" plan "$models/$m.onnx" --gpus "$g" --search "$s" --budget 0 --no-progress \
           -o "$tmp/p.json" > "$tmp/out" 2>&1; then
        echo "$line $g GPUs failed: $(tail -1 "$tmp/out")"; status=1; continue 2
      fi
      read -r t used < <(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["predicted"]["step_time_s"], p["search"]["options"].get("gpus_used", p["topology"]["num_devices"]))' "$tmp/p.json")
      line+=" $g:$(python3 -c 'import sys; print(f"{float(sys.argv[1]) * 1e3:.3f}")' "$t")ms"
      [ "$used" != "$g" ] && line+="(uses $used)"
      if [ -n "$last" ] && python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) * (1 + 1e-9) else 1)' "$t" "$last"; then
        line+=" SLOWER"; status=1
      fi
      last=$t
    done
    echo "$line"
  done
}
exit $status
