# simulate runs a baseline inside pipeline stages; a plan 1F1B cannot order (model parallelism
# splits the tied embedding differently in the backward pass, so the last stage fetches it from
# the first in both parts of a pass) runs its micro-batches in GPipe order, says so, and verifies.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 >/dev/null &&
$PLANNER simulate $TMP/tiny.onnx --batch 16 --micro-batches 4 --gpus 4 --pipeline-stages 2 | sed -n 3,5p &&
$PLANNER simulate $TMP/tiny.onnx --batch 16 --micro-batches 4 --gpus 4 --pipeline-stages 2 --strategy model-parallel | sed -n 4p &&
$PLANNER plan $TMP/tiny.onnx --batch 16 --micro-batches 4 --gpus 4 --pipeline-stages 2 --search model-parallel -o $TMP/p.json | grep 'GPipe' &&
$PLANNER verify $TMP/tiny.onnx --plan $TMP/p.json | grep -v 'step:'
