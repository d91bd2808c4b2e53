#!/usr/bin/env bash
# The plan time and peak memory of `planner plan` on large clusters (issues 16 and 17): GPT-style
# models generated graph-only, planned as replicas of a block (--replicas, docs/search.md). Prints
# one row per case: GPUs, what was planned, wall seconds, peak RSS, predicted step and memory.
#   bench/scale/large_clusters.sh [build/planner] [work folder]
set -euo pipefail
. "$(dirname "$0")/plan_timed.sh" "$@"
"$planner" generate gpt "$work/gpt3-1.3b.onnx" --preset gpt3-1.3b >/dev/null
"$planner" generate gpt "$work/gpt3-13b.onnx" --preset gpt3-13b >/dev/null
"$planner" generate gpt "$work/gpt3-175b.onnx" --preset gpt3-175b >/dev/null
run() {
  plan_timed "$@"
  printf '%-44s %8.1f s %8.2f GB  step %-10s memory %s\n' "$1" "$secs" "$gb" "${step:-none}" \
    "${mem:-$(grep -m1 error "$log")}"
}
run gpt3-1.3b_1024gpus gpt3-1.3b --gpus 1024 --batch 1024
run gpt3-1.3b_4096gpus gpt3-1.3b --gpus 4096 --batch 4096
run gpt3-1.3b_64gpus_flat gpt3-1.3b --gpus 64 --batch 512 --replicas 1
run gpt3-1.3b_64gpus_replicas8 gpt3-1.3b --gpus 64 --batch 512 --replicas 8
run gpt3-13b_64gpus_replicas2_stages4 gpt3-13b --gpus 64 --batch 1024 --replicas 2 \
  --pipeline-stages 4 --micro-batches 32
# Issue 16's 13B comparison: megatron-3d's enumeration (tensor x pipeline x data degrees) on the
# flat cluster, then the dp search and megatron-2d in 2 replicas of 4 stages with the same
# micro-batch size (16 samples, 64 micro-batches of the global batch).
run gpt3-13b_64gpus_megatron3d gpt3-13b --gpus 64 --batch 1024 --search megatron-3d --micro-batches 64
run gpt3-13b_64gpus_replicas2_stages4_m64_dp gpt3-13b --gpus 64 --batch 1024 --replicas 2 \
  --pipeline-stages 4 --micro-batches 64
run gpt3-13b_64gpus_replicas2_stages4_m64_megatron2d gpt3-13b --gpus 64 --batch 1024 --replicas 2 \
  --pipeline-stages 4 --micro-batches 64 --search megatron-2d
# GPT-3 175B on 1,024 H100: the block `plan` names when the model does not fit
# (cli.replicas_do_not_fit), with the recomputation and sharding it then needs pinned, and
# without them (the planner tries them itself), and megatron-2d in the same stages.
run gpt3-175b_1024gpus_replicas8_stages16_pinned gpt3-175b --gpus 1024 --batch 1024 --replicas 8 \
  --pipeline-stages 16 --micro-batches 32 --recompute all --zero 2
run gpt3-175b_1024gpus_replicas8_stages16 gpt3-175b --gpus 1024 --batch 1024 --replicas 8 \
  --pipeline-stages 16 --micro-batches 32
run gpt3-175b_1024gpus_replicas8_stages16_megatron2d gpt3-175b --gpus 1024 --batch 1024 \
  --replicas 8 --pipeline-stages 16 --micro-batches 32 --recompute all --zero 2 --search megatron-2d
