# `planner export megatron PLAN.json`: the Megatron-LM arguments that run the plan's layout
# (tensor, pipeline and virtual stages, sequence parallelism, micro-batch and global batch,
# recomputation, the distributed optimizer, precision, flash attention) and the model's shape as
# its file shows it. Every argument written is one Megatron-LM's parser takes at the commit
# tests/cli/data/megatron_arguments.txt records (scripts/megatron_arguments.py reads it from
# Megatron-LM's source).
$PLANNER generate gpt $TMP/g.onnx --layers 8 --hidden 64 --heads 4 --seq 16 --vocab 128 > /dev/null
$PLANNER plan $TMP/g.onnx --batch 32 --micro-batches 8 --gpus 16 --pipeline-stages 2 --virtual-stages 2 --search megatron --tensor-parallel 4 --sequence-parallel --recompute selective --precision bf16 --attention fused --optimizer adam --no-progress -o $TMP/p.json > /dev/null
$PLANNER export megatron $TMP/p.json | sed "s|$TMP/||g"
$PLANNER export megatron $TMP/p.json -o $TMP/args.txt && grep -c '^--' $TMP/args.txt
grep '^--' $TMP/args.txt | cut -d' ' -f1 | while read -r flag; do
  grep -qx -- "$flag" tests/cli/data/megatron_arguments.txt || echo "not a Megatron-LM argument: $flag"
done
head -1 tests/cli/data/megatron_arguments.txt | cut -c1-60
# Full recomputation, fp16, FP8, ZeRO and a search whose splits are not Megatron's: the nearest
# arguments, and a note for what does not map.
$PLANNER plan $TMP/g.onnx --batch 32 --gpus 8 --search megatron --tensor-parallel 8 --recompute all --precision fp8 --optimizer adam --no-progress -o $TMP/q.json > /dev/null
$PLANNER export megatron $TMP/q.json | grep -E '^--(recompute|bf16|fp8|tensor)'
$PLANNER plan $TMP/g.onnx --batch 32 --gpus 8 --search fsdp --zero 3 --recompute ops --precision fp16 --optimizer adam --no-progress -o $TMP/z.json > /dev/null
$PLANNER export megatron $TMP/z.json | grep -E '^(# note|--(use|recompute|fp16))'
$PLANNER plan $TMP/g.onnx --batch 32 --gpus 4 --search mcmc --max-proposals 50 --budget 0 --optimizer adam --no-progress -o $TMP/m.json > /dev/null
$PLANNER export megatron $TMP/m.json | grep -E '^(# note|--tensor)'
# Stages whose layers are uneven (6 layers in 2 x 2 runs) are placed by Megatron-LM's layout
# string ("E" the embedding, "t" a layer, "L" the head, "|" between runs in model order).
$PLANNER generate gpt $TMP/g6.onnx --layers 6 --hidden 64 --heads 4 --seq 16 --vocab 128 > /dev/null
$PLANNER plan $TMP/g6.onnx --batch 16 --micro-batches 4 --gpus 4 --pipeline-stages 2 --virtual-stages 2 --no-progress -o $TMP/v.json > /dev/null
$PLANNER export megatron $TMP/v.json | grep -E '^(# note: the plan.s stages|--pipeline)'
# Refused: a target it does not know, an inference plan, an output that is the plan.
$PLANNER export torchtitan $TMP/p.json 2>&1 | head -1; echo "exit ${PIPESTATUS[0]}"
$PLANNER plan $TMP/g.onnx --batch 4 --gpus 2 --mode infer --no-progress -o $TMP/i.json > /dev/null
$PLANNER export megatron $TMP/i.json 2>&1 | sed "s|$TMP/||g"; echo "exit ${PIPESTATUS[0]}"
$PLANNER export megatron $TMP/p.json -o $TMP/p.json 2>&1 | sed "s|$TMP/||g"; echo "exit ${PIPESTATUS[0]}"
