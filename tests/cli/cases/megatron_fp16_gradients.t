# Megatron-LM's --fp16 reduces parameter gradients in fp16 (no --accumulate-allreduce-grads-in-
# fp32): under --framework megatron --precision fp16 the gradients of parameters are 16-bit, so a
# data-parallel step sends half the bytes AMP's does (--framework none keeps them f32, as DDP
# under AMP), while bf16 and ZeRO keep f32 gradients under every framework. The step verifies
# (the update widens the fp16 gradient as it reads it).
$PLANNER generate gpt $TMP/g.onnx --layers 2 --hidden 256 --heads 4 --seq 64 --vocab 1024 > /dev/null
for step in "--framework none --precision fp16" "--framework megatron --precision fp16" "--framework megatron --precision bf16" "--framework megatron --precision fp16 --zero 2"; do
  printf '%-50s' "$step"
  $PLANNER plan $TMP/g.onnx --batch 16 --gpus 8 --search data-parallel --optimizer adam --recompute none $step --no-progress -o $TMP/p.json | grep -E '^(communication|peak memory)' | awk '{s = s (NR > 1 ? ", " : "") $1 " " $2 " " $3} END {print s}'
done
$PLANNER plan $TMP/g.onnx --batch 16 --gpus 8 --optimizer adam --framework megatron --precision fp16 --zero 0 --recompute none --dump-after train | grep -E '^  %h0.mlp.c_fc.weight/grad[^ ]*: ' | cut -d= -f1
$PLANNER verify $TMP/g.onnx --batch 8 --gpus 4 --search megatron --optimizer adam --framework megatron --precision fp16 --zero 0 --micro-batches 2 | grep -E '^ok'
