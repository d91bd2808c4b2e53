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
# The megatron search sees fused cores as attention (it splits their heads, not data parallelism).
$PLANNER plan $TMP/l.onnx --batch 8 --topology dgx-h100 --search megatron --precision bf16 --optimizer adam --attention fused --no-progress -o $TMP/q.json | grep -o '^note: [0-9]*-way tensor parallelism'
python3 -c "import json, sys; p = json.load(open(sys.argv[1])); print('attention split:', sorted({o['config'] for o in p['ops'] if o.get('op_type') == 'Attention'}))" $TMP/q.json
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
# Attention as torch's exporter writes nn.MultiheadAttention: heads folded into the batch
# ([B*H, S, D]), the query divided before the product, a scale of one and a constant causal mask
# of shape [1, S, T] added; K^T's transpose is folded into the kernel's layout.
cat > $TMP/att.onnxtxt <<'MODEL'
<ir_version: 8, opset_import: ["" : 17]>
att (float[2,8,16] x) => (float[4,8,8] y) <float[16,48] w = {}, float[8,8] wo = {}, int64[3] split = {16, 16, 16}, int64[4] heads = {2, 8, 2, 8}, int64[3] rows = {4, 8, 8}> {
  mask = Constant<value = float[1,8,8] {0, -10000, -10000, -10000, -10000, -10000, -10000, -10000, 0, 0, -10000, -10000, -10000, -10000, -10000, -10000, 0, 0, 0, -10000, -10000, -10000, -10000, -10000, 0, 0, 0, 0, -10000, -10000, -10000, -10000, 0, 0, 0, 0, 0, -10000, -10000, -10000, 0, 0, 0, 0, 0, 0, -10000, -10000, 0, 0, 0, 0, 0, 0, 0, -10000, 0, 0, 0, 0, 0, 0, 0, 0}>()
  root = Constant<value = float {2.8284271}>()
  one = Constant<value = float {1.0}>()
  qkv = MatMul(x, w)
  q0, k0, v0 = Split<axis = 2>(qkv, split)
  qh = Reshape(q0, heads)
  q1 = Transpose<perm = [0, 2, 1, 3]>(qh)
  kh = Reshape(k0, heads)
  k1 = Transpose<perm = [0, 2, 1, 3]>(kh)
  vh = Reshape(v0, heads)
  v1 = Transpose<perm = [0, 2, 1, 3]>(vh)
  q = Reshape(q1, rows)
  k = Reshape(k1, rows)
  v = Reshape(v1, rows)
  qd = Div(q, root)
  kt = Transpose<perm = [0, 2, 1]>(k)
  scores = MatMul(qd, kt)
  scaled = Mul(scores, one)
  masked = Add(scaled, mask)
  probs = Softmax<axis = -1>(masked)
  ctx = MatMul(probs, v)
  y = MatMul(ctx, wo)
}
MODEL
$PLANNER plan $TMP/att.onnxtxt --gpus 2 --attention fused --dump-after train | grep 'ai.planner.Attention<' | sed 's/  #.*//'
$PLANNER verify $TMP/att.onnxtxt --gpus 2 --attention fused --search dp | grep -E '^ok'
$PLANNER verify $TMP/att.onnxtxt --gpus 4 --attention fused --search dp --mode infer | grep -E '^ok'
# explain names the fused cores (the last plan above: fused, full recomputation).
$PLANNER explain $TMP/p.json --model $TMP/l.onnx | grep -E '^(attention|recompute)'
