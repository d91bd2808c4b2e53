#!/usr/bin/env bash
# `planner compile --backend cuda` counts, per rank, the kernel calls the cuda backend would run
# on the host (manifest.json host_fallback_kernels; planner_rt/cuda_host_ops.h): a shared model
# planned for training on 8 GPUs with dp, frontier and megatron must have none (issue 15),
# recurrent operators (LSTM and its gradients: rnn_program.h on the device) included; the test
# prints how many recurrent kernel calls the programs hold.
# Skipped (exit 77), saying why, where the model is absent.
#   cuda_host_fallback_test.sh PLANNER MODELS_DIR MODEL [--batch N]
set -uo pipefail
planner=$1 models=$2 m=$3
shift 3
[ -f "$models/$m.onnx" ] || { echo "SKIPPED: $models/$m.onnx is absent"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
for s in dp frontier megatron; do
  if ! "$planner" plan "$models/$m.onnx" --gpus 8 --search "$s" --budget 0 --no-progress "$@" \
       -o "$tmp/$s.json" > "$tmp/log" 2>&1; then
    echo "$m $s: plan failed: $(tail -1 "$tmp/log")"; status=1; continue
  fi
  "$planner" compile "$tmp/$s.json" --model "$models/$m.onnx" --backend cuda -o "$tmp/$s" > /dev/null \
    || { echo "$m $s: compile failed"; status=1; continue; }
  python3 - "$tmp/$s" "$m $s" <<'PY' || status=1
import json, re, sys
folder, label = sys.argv[1:3]
manifest = json.load(open(folder + "/manifest.json"))
host = sum(r["host_fallback_kernels"] for r in manifest["ranks"])
# Kernel calls of the fused recurrent operators (LSTM, GRU, RNN and their gradients).
recurrent = len(re.findall(r"^\s+(?:ai\.planner\.)?(?:LSTM|GRU|RNN)\w*[ (:]",
                           open(folder + "/programs.txt").read(), re.M))
print(f"{label}: {host} host-fallback kernel calls on 8 ranks ({recurrent} recurrent)")
sys.exit(0 if host == 0 else 1)
PY
done
exit $status
