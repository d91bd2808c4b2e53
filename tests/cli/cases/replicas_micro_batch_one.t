# Micro-batches of one sample (Megatron's usual setting for the largest models) work with
# replicas: the model imports alike at every batch size (importers/unflatten_linear.h keeps
# linear layers on their leading dimensions even where the batch is 1), so one replica's plan
# repeats over the batch; it verifies against the unpartitioned step.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 >/dev/null &&
for b in 1 2; do $PLANNER plan $TMP/tiny.onnx --batch $b --gpus 2 --dump-after train | grep -c ' = ' ; done &&
$PLANNER plan $TMP/tiny.onnx --batch 16 --gpus 16 --replicas 4 --micro-batches 4 -o $TMP/p.json | grep -E 'replicas|^step time' | sed 's/[0-9.]* ms/T ms/g' &&
$PLANNER verify $TMP/tiny.onnx --batch 16 --gpus 16 --replicas 4 --micro-batches 4 --pipeline-stages 2 | grep -v 'step:'
