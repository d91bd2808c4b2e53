#!/usr/bin/env bash
# Exports the accuracy benchmark's training-mode models (once, into the build folder) and holds
# the planner's predicted steps against the published measured ones. The bounds asserted here
# are the accuracy reached when the cost model's parameters were last chosen (docs/cost-model.md,
# "Accuracy"), so a change that makes predictions worse fails; the targets are printed
# by the benchmark itself.
set -euo pipefail
planner=$1 source=$2 models=$3
python=/usr/bin/python3
if ! "$python" -c "import torch, torchvision, onnx" 2>/dev/null; then
  echo "SKIPPED: Debian's python3-torch, python3-torchvision and python3-onnx are needed to export the models"
  exit 77
fi
"$python" "$source/scripts/export_train_models.py" "$models" >/dev/null
"$python" "$source/bench/accuracy/accuracy.py" --planner "$planner" --models "$models" \
  --check --limits 0.10,0.22,0.12
# Peak memory of one GPU's step against the tensors PyTorch's autograd keeps for the same modules.
"$python" "$source/bench/accuracy/saved_memory.py" --planner "$planner" --models "$models" \
  --batch 8 --check 0.03
