#!/usr/bin/env bash
# The runtime's unpartitioned training step against PyTorch's (scripts/torch_train_compare.py:
# the same graph, weights and batch through torch's operators, autograd and torch.optim), or,
# with the group `sweep`, every differentiated operator against torch.autograd on edge inputs
# (scripts/grad_sweep.py). Skipped (77), saying why, without Debian's python3-torch.
#
#   torch_compare_test.sh PLANNER SOURCE_DIR MODELS_DIR WORK_DIR GROUP
# GROUP: sgd (the examples, a generated GPT with dropout and a generated Llama, the ResNet-50
# training export) | momentum, adam, recompute (three of those each) | bert (the BERT training
# export, batch 1) | sweep. scripts/torch_train_compare.py runs any other combination.
set -uo pipefail
planner=$1 src=$2 models=$3 work=$4 group=$5
python=/usr/bin/python3
if ! "$python" -c 'import torch, onnx' 2> /dev/null; then
  echo "SKIPPED: $python cannot import torch and onnx (Debian's python3-torch, python3-onnx)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
if [ "$group" = sweep ]; then
  exec "$python" "$src/scripts/grad_sweep.py" --planner "$planner" --work "$work/sweep" --check
fi
compare=("$python" "$src/scripts/torch_train_compare.py" --planner "$planner" --check)
specs=("$src/examples/mlp.onnxtxt" "$src/examples/transformer_block.onnxtxt"
       "$src/examples/small_cnn.onnxtxt" "$src/examples/lstm.onnxtxt")
"$planner" generate gpt "$work/gpt.onnx" --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 \
  --dropout 0.1 > /dev/null || exit 1
"$planner" generate llama "$work/llama.onnx" --layers 2 --hidden 64 --heads 4 --kv-heads 2 \
  --seq 16 --vocab 128 > /dev/null || exit 1
specs+=("$work/gpt.onnx" "$work/llama.onnx")
train_model() {  # a training export of ../shared/models/train, or a visible note
  if [ -f "$models/train/$1.onnx" ]; then
    specs+=("$models/train/$1.onnx")
  else
    echo "note: $models/train/$1.onnx is absent: not compared"
  fi
}
case "$group" in
  sgd)
    train_model resnet50_train
    exec "${compare[@]}" --optimizer sgd --work "$work/runs" "${specs[@]}" ;;
  # The optimizers' second step and recomputation on the models where they differ most: the
  # MLP, the transformer block, the CNN's batch statistics and the generated decoders.
  momentum)
    exec "${compare[@]}" --optimizer momentum --steps 2 --work "$work/runs" "${specs[0]}" \
      "${specs[2]}" "$work/gpt.onnx" ;;
  adam)
    exec "${compare[@]}" --optimizer adam --steps 2 --work "$work/runs" "${specs[1]}" \
      "$work/gpt.onnx" "$work/llama.onnx" ;;
  recompute)
    exec "${compare[@]}" --optimizer sgd --recompute all --work "$work/runs" "${specs[1]}" \
      "$work/gpt.onnx" "$work/llama.onnx" ;;
  bert)
    specs=()
    train_model bert_base_train
    [ ${#specs[@]} -gt 0 ] || { echo "SKIPPED: no BERT training export"; exit 77; }
    exec "${compare[@]}" --optimizer sgd --batch 1 --work "$work/runs" "${specs[@]}" ;;
  *) echo "unknown group '$group'"; exit 2 ;;
esac
