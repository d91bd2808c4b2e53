# --micro-batches needs a training step and a global batch it divides, on a model whose batch
# can be bound: each refusal is one line naming the flag.
$PLANNER generate gpt $TMP/tiny.onnx --layers 1 --hidden 32 --heads 2 --seq 8 --vocab 64 >/dev/null
$PLANNER plan $TMP/tiny.onnx --batch 8 --micro-batches 3 --gpus 2 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $TMP/tiny.onnx --micro-batches 2 --gpus 2 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $TMP/tiny.onnx --batch 8 --micro-batches 2 --mode infer --gpus 2 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $EXAMPLES/mlp.onnxtxt --batch 64 --micro-batches 2 --gpus 2 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $TMP/tiny.onnx --batch 8 --micro-batches 0 --gpus 2 -o $TMP/p.json 2>&1 | head -1; echo "[${PIPESTATUS[0]}]"
test ! -e $TMP/p.json && echo "no plan written"
