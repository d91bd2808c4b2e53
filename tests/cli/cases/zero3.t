# ZeRO stage 3 (issue 16): the backward pass gathers each parameter again, so a stage-3 plan
# holds less than stage 2 and sends more; stage-3 plans verify with Adam, with recomputation,
# with micro-batches and inside pipeline stages; the plan records the stage.
$PLANNER generate gpt $TMP/g.onnx --layers 4 --hidden 128 --heads 4 --seq 32 --vocab 256 --dropout 0.1 >/dev/null &&
$PLANNER plan $TMP/g.onnx --batch 8 --gpus 4 --search fsdp --zero 2 --optimizer adam --format json -o $TMP/z2.json > $TMP/z2.txt &&
$PLANNER plan $TMP/g.onnx --batch 8 --gpus 4 --search fsdp --zero 3 --optimizer adam --format json -o $TMP/z3.json > $TMP/z3.txt &&
grep -o '"zero": [0-9]' $TMP/z3.json &&
m2=$(grep -A2 '"predicted"' $TMP/z2.txt | sed -n 's/.*"peak_memory_bytes": \([0-9]*\).*/\1/p') &&
m3=$(grep -A2 '"predicted"' $TMP/z3.txt | sed -n 's/.*"peak_memory_bytes": \([0-9]*\).*/\1/p') &&
c2=$(grep -A3 '"predicted"' $TMP/z2.txt | sed -n 's/.*"comm_bytes": \([0-9]*\).*/\1/p') &&
c3=$(grep -A3 '"predicted"' $TMP/z3.txt | sed -n 's/.*"comm_bytes": \([0-9]*\).*/\1/p') &&
awk -v a="$m2" -v b="$m3" -v c="$c2" -v d="$c3" 'BEGIN { print (b < a) ? "stage 3 holds less" : "stage 3 holds " b " B, stage 2 " a " B"; print (d > c) ? "stage 3 sends more" : "stage 3 sends " d " B, stage 2 " c " B" }' &&
$PLANNER verify $TMP/g.onnx --plan $TMP/z3.json | grep -v 'step:' &&
$PLANNER verify $TMP/g.onnx --batch 8 --gpus 4 --search dp --zero 3 --recompute all | grep -v 'step:' &&
$PLANNER verify $TMP/g.onnx --batch 8 --micro-batches 4 --gpus 8 --pipeline-stages 2 --search fsdp --zero 3 --optimizer adam | grep -v 'step:'
$PLANNER verify $EXAMPLES/transformer_block.onnxtxt --gpus 4 --search fsdp --zero 3 --optimizer adam | grep -v 'step:'
$PLANNER verify $EXAMPLES/small_cnn.onnxtxt --gpus 4 --search mcmc --max-proposals 100 --zero 3 --optimizer momentum | grep -v 'step:'
