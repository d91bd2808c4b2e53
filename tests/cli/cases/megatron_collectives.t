# Tensor parallelism as Megatron-LM runs it: on a generated decoder (two layers, a square
# d_model x d_model attention output projection), `--search megatron` on 8 GPUs compiles to two
# all-reduces per layer in the forward pass and two in the backward pass, no operator run whole,
# and nothing gathered inside the layers; the LM head is split along the vocabulary as
# Megatron-LM's (its input gradient is one more all-reduce; the logits, a model output, are
# gathered once). It verifies. With GPT-2's fused layout (--qkv blocks) the contiguous split of
# the query/key/value projection mixes heads, so the step gathers it whole per layer.
$PLANNER generate gpt $TMP/heads.onnx --layers 2 --hidden 256 --heads 8 --seq 32 --vocab 512 >/dev/null &&
$PLANNER generate gpt $TMP/blocks.onnx --layers 2 --hidden 256 --heads 8 --seq 32 --vocab 512 --qkv blocks >/dev/null &&
for m in heads blocks; do
  $PLANNER plan $TMP/$m.onnx --batch 8 --gpus 8 --search megatron --no-fallback --dump-after program > $TMP/$m.txt &&
  awk '/^rank 0$/{f=1; next} /^rank /{f=0} f' $TMP/$m.txt > $TMP/$m.rank0 &&
  echo "$m: rank 0 runs $(grep -c '^  all_reduce' $TMP/$m.rank0) all-reduces, $(grep -c '^  all_gather' $TMP/$m.rank0) all-gathers, $(grep -c '(whole)' $TMP/$m.rank0) whole operators"
done &&
$PLANNER verify $TMP/heads.onnx --batch 8 --gpus 8 --search megatron --no-fallback | grep -E '^ok|^verify'
$PLANNER generate llama $TMP/l.onnx --layers 1 --hidden 64 --heads 4 --seq 8 --vocab 64 --qkv blocks; echo "exit $?"
