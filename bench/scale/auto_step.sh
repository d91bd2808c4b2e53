#!/usr/bin/env bash
# `planner plan` with only the GPUs, the batch, the precision and the optimizer (and the
# topology and memory limit where the case has one): the workloads of issue #39's "finds the
# plan by itself", graph-only models from `planner generate`. Prints one row per case: wall
# seconds, peak RSS, predicted step and memory, and the step plan chose (its first note).
#   bench/scale/auto_step.sh [build/planner] [work folder]
set -euo pipefail
. "$(dirname "$0")/plan_timed.sh" "$@"
"$planner" generate gpt "$work/gpt3-13b.onnx" --preset gpt3-13b >/dev/null
"$planner" generate gpt "$work/gpt3-175b.onnx" --preset gpt3-175b >/dev/null
"$planner" generate llama "$work/llama2-7b.onnx" --preset llama2-7b --seq 2048 >/dev/null
# 8 DGX A100 over 200 Gb/s HDR InfiniBand, one NIC per GPU (bench/accuracy/llm.py's Selene).
"$planner" topology show dgx-a100 --format json | python3 -c '
import json, sys
j = json.load(sys.stdin)
j["name"] = "dgx-a100-8x8"
j["nodes"][0]["count"] = 8
j["link_types"]["ib-hdr"] = {"bandwidth": 25e9, "latency": 1e-6}
j["network"] = {"switches": ["ib"], "links": [{"from": "nic*", "to": "ib", "type": "ib-hdr"}]}
json.dump(j, open(sys.argv[1], "w"), indent=1)' "$work/dgx-a100-8x8.json"
run() {
  plan_timed "$@"
  local how
  how=$(grep -m1 '^note: \(sized\|planned with\)' "$log" | cut -c7-120 || true)
  printf '%-28s %7.1f s %6.2f GB  step %-9s memory %-9s %s\n' "$1" "$secs" "$gb" \
    "${step:-none}" "${mem:-$(grep -m1 error "$log" | cut -c1-100)}" "${how:-as given}"
}
run llama2-7b_8a100_36GB llama2-7b --topology dgx-a100 --batch 64 --memory-limit 36GB
run llama2-7b_64a100_36GB llama2-7b --topology "$work/dgx-a100-8x8.json" --batch 512 \
  --memory-limit 36GB
run gpt3-13b_64h100 gpt3-13b --gpus 64 --batch 1024
run gpt3-175b_1024h100 gpt3-175b --gpus 1024 --batch 1536
