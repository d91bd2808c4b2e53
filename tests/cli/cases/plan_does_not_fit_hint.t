# A training step that does not fit on the GPUs given names, beside the GPU count that would
# hold it as it is, the pipeline stages and micro-batches that would shrink it on these GPUs
# (an estimate: stages until parameters and optimizer state take at most half a GPU, micro-
# batches until the rest takes four tenths); inference and a model whose state outgrows every
# GPU get no such hint. Nothing is written.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 >/dev/null &&
$PLANNER plan $TMP/tiny.onnx --batch 32 --gpus 8 --memory-limit 400KiB --recompute none --zero 0 -o $TMP/p.json; echo "exit $?"
$PLANNER plan $TMP/tiny.onnx --batch 32 --gpus 8 --memory-limit 40KiB --recompute none --zero 0 -o $TMP/p.json; echo "exit $?"
$PLANNER plan $TMP/tiny.onnx --batch 32 --gpus 8 --memory-limit 100KiB --mode infer -o $TMP/p.json; echo "exit $?"
test ! -e $TMP/p.json && echo "no plan written"
