#!/usr/bin/env bash
# The plan time and peak memory of `planner plan` on graphs of 100,000 operators (issue 17): a
# chain of MatMul + Relu layers written in ONNX's text form, planned for training (33,334
# forward operators: 100,002 with the backward pass and updates) and for inference (100,000
# forward operators), on 8 GPUs with the default search and budget (60 s). Prints one row per
# case: operators, wall seconds, peak RSS, search seconds, predicted step.
#   bench/scale/large_graphs.sh [build/planner] [work folder]
set -euo pipefail
planner=${1:-build/planner}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
# chain FILE LAYERS: x -> (MatMul w_i -> Relu) x LAYERS, [64, 256] activations.
chain() {
  awk -v n="$2" 'BEGIN {
    print "<ir_version: 8, opset_import: [\"\" : 17]>";
    print "chain (float[64,256] x) => (float[64,256] y) <";
    for (i = 1; i <= n; ++i) printf "  float[256,256] w%d = {}%s\n", i, i < n ? "," : "";
    print "> {";
    prev = "x";
    for (i = 1; i <= n; ++i) {
      printf "  m%d = MatMul(%s, w%d)\n", i, prev, i;
      out = i < n ? "r" i : "y";
      printf "  %s = Relu(m%d)\n", out, i;
      prev = out;
    }
    print "}";
  }' >"$1"
}
run() {
  local name=$1 model=$2
  shift 2
  local log="$work/$name.log"
  /usr/bin/time -f "%e %M" -o "$work/$name.time" "$planner" plan "$model" --gpus 8 \
    --no-progress -o "$work/$name.json" "$@" >"$log" 2>&1 || true
  read -r secs kb <"$work/$name.time"
  local ops search step
  ops=$(grep -m1 '^model' "$log" | grep -o '[0-9]* operators' || echo '? operators')
  search=$(grep -m1 '^search' "$log" | awk '{print $3, $4}')
  step=$(grep -m1 '^step time' "$log" | awk '{print $3, $4}')
  printf '%-12s %-18s %7.1f s %6.2f GB  search %-9s step %s\n' "$name" "$ops" "$secs" \
    "$(awk -v k="$kb" 'BEGIN { print k / 1048576 }')" "${search:-none}" \
    "${step:-$(grep -m1 error "$log")}"
}
chain "$work/chain33k.onnxtxt" 16667
chain "$work/chain50k.onnxtxt" 50000
run train_100k "$work/chain33k.onnxtxt" --mode train
run infer_100k "$work/chain50k.onnxtxt" --mode infer
