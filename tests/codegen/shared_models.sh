#!/usr/bin/env bash
# `planner verify` on a shrunk copy of one shared model (../shared/models): the file as it is,
# imported with `--shrink OLD=NEW` (importers/shrink.h), which keeps every operator and
# attribute and replaces the dimensions below in the inputs, weights, shape constants and
# hidden sizes, so a step runs in seconds on the cpu backend. Each plan of the table is
# searched, compiled, run partitioned and whole, and compared. Skipped (exit 77), saying why,
# where the shared models are absent.
#
# With a fourth argument `steps`, the plans are instead the step variants of issue 16 on 4
# GPUs: recomputation under dp, sharded state with Adam under the fsdp baseline (ZeRO stages 2
# and 3), and both under mcmc; and, for the models with a batch to bind, micro-batches under dp and fsdp, and
# pipelines of 2 stages (1F1B and GPipe).
#
#   shared_models.sh MODEL PLANNER MODELS_DIR [steps]
set -euo pipefail
model=$1 planner=$2 models=$3 what=${4:-plans}
if [ ! -f "$models/$model.onnx" ]; then
  echo "SKIPPED: $model needs $models/$model.onnx, which is absent"; exit 77
fi

source "$(dirname "$0")/shrink_maps.sh"
shrink_map "$model"

status=0
if [ "$what" = steps ]; then
  while read -r variant; do
    echo "== $model --shrink $shrink --gpus 4 $variant"
    # shellcheck disable=SC2086
    "$planner" verify "$models/$model.onnx" --shrink "$shrink" --gpus 4 $variant \
      ${batch:+--batch "$batch"} ${steps:+--steps "$steps"} || status=1
  done <<'VARIANTS'
--search dp --recompute all
--search fsdp --optimizer adam
--search mcmc --max-proposals 100 --zero 2 --recompute all
--search fsdp --zero 3 --optimizer adam
VARIANTS
  # Micro-batches (the models with a batch to bind): the batch in two passes, gradients
  # accumulated, under the dp search and with sharded state.
  if [ -n "$batch" ]; then
    for variant in "--search dp" "--search fsdp --optimizer adam" \
      "--pipeline-stages 2 --schedule 1f1b --search dp" \
      "--pipeline-stages 2 --schedule gpipe --search megatron"; do
      echo "== $model --shrink $shrink --gpus 4 --batch $batch --micro-batches 2 $variant"
      # shellcheck disable=SC2086
      "$planner" verify "$models/$model.onnx" --shrink "$shrink" --gpus 4 --batch "$batch" \
        --micro-batches 2 $variant ${steps:+--steps "$steps"} || status=1
    done
  fi
  exit $status
fi
for plan in $plans; do
  IFS=: read -r search gpus mode <<< "$plan"
  echo "== $model --shrink $shrink --search $search --gpus $gpus --mode ${mode:-train}"
  "$planner" verify "$models/$model.onnx" --shrink "$shrink" --search "$search" --gpus "$gpus" \
    --mode "${mode:-train}" ${batch:+--batch "$batch"} ${steps:+--steps "$steps"} || status=1
done
exit $status
