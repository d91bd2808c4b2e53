#!/usr/bin/env bash
# `planner verify --inputs DIR` on the ONNX test suite's own data (Debian's libonnx-testdata):
# Relu's test passes, and the same model held against another test's expected outputs (Abs's,
# same shape) fails with the one-line difference, so the comparison with output_N.pb is real.
# Skipped (77) where the test data is absent.
set -uo pipefail
planner=$1
data=/usr/share/libonnx-testdata/data/node
[ -d "$data/test_relu" ] || { echo "SKIPPED: $data is absent (Debian's libonnx-testdata)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$planner" verify "$data/test_relu/model.onnx" --mode infer --gpus 2 \
  --inputs "$data/test_relu/test_data_set_0" > "$tmp/ok.log" 2>&1 \
  || { cat "$tmp/ok.log"; echo "FAIL: test_relu does not verify"; exit 1; }
grep -q "against .*: 1 outputs" "$tmp/ok.log" || { cat "$tmp/ok.log"; exit 1; }
mkdir -p "$tmp/wrong"
cp "$data/test_relu/test_data_set_0/input_0.pb" "$tmp/wrong/"
cp "$data/test_abs/test_data_set_0/output_0.pb" "$tmp/wrong/"
if "$planner" verify "$data/test_relu/model.onnx" --mode infer --gpus 2 --inputs "$tmp/wrong" \
     > "$tmp/bad.log" 2>&1; then
  cat "$tmp/bad.log"; echo "FAIL: Relu verified against Abs's outputs"; exit 1
fi
grep -q "the unpartitioned step differs from $tmp/wrong" "$tmp/bad.log" || { cat "$tmp/bad.log"; exit 1; }
# Training steps read the given inputs too (every step the same; scripts/torch_train_compare.py
# feeds them): the outputs of the last step's forward pass are held to output_N.pb.
"$planner" verify "$data/test_relu/model.onnx" --gpus 2 \
  --inputs "$data/test_relu/test_data_set_0" > "$tmp/train.log" 2>&1 \
  || { cat "$tmp/train.log"; echo "FAIL: test_relu does not verify in training"; exit 1; }
if "$planner" verify "$data/test_relu/model.onnx" --gpus 2 --inputs "$tmp/wrong" \
     > "$tmp/train_bad.log" 2>&1; then
  cat "$tmp/train_bad.log"; echo "FAIL: Relu's training step verified against Abs's outputs"; exit 1
fi
echo "ok: test_relu verifies against its outputs and not against test_abs's"
