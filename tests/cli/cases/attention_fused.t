# --attention fused: each attention core becomes one ai.planner.Attention (FlashAttention's
# kernel: no sequence x sequence tensor; the backward pass keeps Y and each row's log-sum-exp
# and recomputes the scores), so a long sequence costs less time and memory; --recompute ops is
# torchtitan's op-level selective checkpointing (attention and every other weight product kept).
# The plan records the choice, compile and verify rebuild the fused step, and it verifies
# partitioned against whole (tensor parallelism splits the heads, sequence parallelism and a
# pipeline around it). A core with dropout on its probabilities stays materialized, named.
$PLANNER generate llama $TMP/l.onnx --layers 2 --hidden 512 --heads 8 --kv-heads 4 --seq 1024 --vocab 4096 > /dev/null
for a in materialized fused; do
  for r in none ops all; do
    printf '%-13s %-5s' "$a" "$r"
    $PLANNER plan $TMP/l.onnx --batch 8 --topology dgx-h100 --search megatron --precision bf16 --optimizer adam --framework torch --attention $a --recompute $r --no-progress -o $TMP/p.json | grep -E '^(step time|peak memory)' | awk '{s = s (NR > 1 ? ", " : "") $1 " " $3 " " $4} END {print s}'
  done
done
python3 -c "import json, sys; o = json.load(open(sys.argv[1]))['search']['options']; print('recorded:', o.get('attention'), o.get('recompute'))" $TMP/p.json
$PLANNER plan $TMP/l.onnx --batch 8 --attention fused --dump-after train | grep -c 'ai.planner.Attention<' | sed 's/^/fused operators: /'
$PLANNER plan $TMP/l.onnx --batch 8 --attention fused --dump-after train | grep -c 'ai.planner.AttentionGrad<' | sed 's/^/gradient operators: /'
$PLANNER plan $TMP/l.onnx --batch 8 --attention fused --dump-after train | grep -c 'Softmax' | sed 's/^/softmaxes left: /'
$PLANNER compile $TMP/p.json --model $TMP/l.onnx -o $TMP/out > /dev/null && echo "compiled"
$PLANNER generate llama $TMP/t.onnx --layers 2 --hidden 64 --heads 4 --kv-heads 2 --seq 16 --vocab 128 > /dev/null
$PLANNER verify $TMP/t.onnx --batch 4 --gpus 4 --optimizer adam --search megatron --attention fused --recompute ops | grep -E '^ok'
$PLANNER verify $TMP/t.onnx --batch 8 --gpus 8 --optimizer adam --search megatron --attention fused --sequence-parallel --pipeline-stages 2 --replicas 2 --micro-batches 2 --lr 0.001 | grep -E '^ok'
$PLANNER verify $TMP/t.onnx --batch 4 --gpus 4 --attention fused --search dp | grep -E '^ok'
$PLANNER generate gpt $TMP/d.onnx --layers 1 --hidden 64 --heads 4 --seq 16 --vocab 128 --dropout 0.1 > /dev/null
$PLANNER plan $TMP/d.onnx --batch 4 --gpus 2 --attention fused --no-progress -o $TMP/d.json 2>&1 >/dev/null | sed "s|$TMP/||g"
$PLANNER plan $TMP/t.onnx --batch 4 --gpus 4 --attention flash; echo "exit $?"
