#!/usr/bin/env bash
# Exports the accuracy benchmark's training-mode models (once, into the build folder) and holds
# the planner's predicted steps against the published measured ones, to the targets (median
# |error| 10%, worst 25%, every 8-GPU/1-GPU ratio within 10%) on fit and held-out rows; where a
# group misses one today, rows.json's known_misses holds it to today's value and says why
# (docs/cost-model.md, "Accuracy"), and a miss that is fixed must leave that list.
set -euo pipefail
planner=$1 source=$2 models=$3
python=/usr/bin/python3
if ! "$python" -c "import torch, torchvision, onnx" 2>/dev/null; then
  echo "SKIPPED: Debian's python3-torch, python3-torchvision and python3-onnx are needed to export the models"
  exit 77
fi
"$python" "$source/scripts/export_train_models.py" "$models" >/dev/null
"$python" "$source/bench/accuracy/accuracy.py" --planner "$planner" --models "$models" \
  --check
# Peak memory of one GPU's step against the tensors PyTorch's autograd keeps for the same modules.
"$python" "$source/bench/accuracy/saved_memory.py" --planner "$planner" --models "$models" \
  --batch 8 --check 0.03
