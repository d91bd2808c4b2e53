# generate --loss ends a decoder in the loss as torch computes it (torchtitan's): the logits
# widened to fp32, a mean cross-entropy against a 'labels' input. Under --precision bf16 the
# widened part and its gradients stay f32 (the planner's mixed precision follows the model's
# explicit .float()), the logits and their gradient bf16; the step verifies partitioned against
# whole, and the fp32 loss region is priced in the step's memory.
$PLANNER generate llama $TMP/t.onnx --layers 1 --hidden 64 --heads 4 --kv-heads 2 --seq 16 --vocab 128 --loss
$PLANNER plan $TMP/t.onnx --batch 4 --gpus 2 --precision bf16 --dump-after train | grep -E "'(loss/float|loss/log_softmax|loss/log_softmax/grad|loss/float/grad|output)'" | sed -E 's/ = .*#/ #/'
$PLANNER verify $TMP/t.onnx --batch 4 --gpus 4 --optimizer adam --attention fused | grep -E '^ok'
$PLANNER generate llama $TMP/big.onnx --layers 2 --hidden 512 --heads 8 --seq 1024 --vocab 32000 > /dev/null
$PLANNER generate llama $TMP/bigloss.onnx --layers 2 --hidden 512 --heads 8 --seq 1024 --vocab 32000 --loss > /dev/null
for m in big bigloss; do
  printf '%-8s' "$m"
  $PLANNER plan $TMP/$m.onnx --batch 8 --topology dgx-h100 --search data-parallel --precision bf16 --optimizer adam --attention fused --no-progress -o $TMP/p.json | grep -E '^peak memory' | awk '{print $1 " " $3 " " $4}'
done
