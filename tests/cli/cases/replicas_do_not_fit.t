# A plan of replicas that does not fit says what would: more GPUs repeat the block without
# shrinking it, so the hint names pipeline stages (and micro-batches) that make the block larger,
# with the replica count that leaves, instead of a GPU count; nothing is written.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 >/dev/null &&
$PLANNER plan $TMP/tiny.onnx --batch 32 --gpus 16 --replicas 4 --memory-limit 300KiB --recompute none --zero 0 -o $TMP/p.json; echo "exit $?"
test ! -e $TMP/p.json && echo "no plan written"
