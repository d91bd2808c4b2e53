# --replicas needs a training step, a global batch and GPUs they divide, and alike devices;
# frontier, compare and simulate, which plan all the GPUs, refuse it: each refusal is one line
# naming the flag.
$PLANNER generate gpt $TMP/tiny.onnx --layers 1 --hidden 32 --heads 2 --seq 8 --vocab 64 >/dev/null
$PLANNER plan $TMP/tiny.onnx --batch 8 --replicas 3 --gpus 8 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $TMP/tiny.onnx --batch 6 --replicas 4 --gpus 8 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $TMP/tiny.onnx --replicas 2 --gpus 8 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $TMP/tiny.onnx --batch 8 --replicas 2 --mode infer --gpus 8 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $TMP/tiny.onnx --batch 8 --replicas 4 --pipeline-stages 4 --gpus 8 -o $TMP/p.json; echo "[$?]"
$PLANNER plan $TMP/tiny.onnx --batch 16 --replicas 2 --topology $EXAMPLES/topologies/h100-a100-2x8.json -o $TMP/p.json; echo "[$?]"
$PLANNER frontier $TMP/tiny.onnx --batch 8 --replicas 2 --gpus 8; echo "[$?]"
$PLANNER compare $TMP/tiny.onnx --batch 8 --replicas 2 --gpus 8; echo "[$?]"
$PLANNER simulate $TMP/tiny.onnx --batch 8 --replicas 2 --gpus 8; echo "[$?]"
test ! -e $TMP/p.json && echo "no plan written"
