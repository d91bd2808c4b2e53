# --precision fp8: bf16's step with the linear layers' matrix products (and their gradients) on
# FP8 tensor cores, each operand scaled and cast to FP8 first (torchao's Float8Linear, dynamic
# per-tensor scaling); the LM head stays bf16. Eager PyTorch pays the casts as separate passes
# (small layers get slower), torch.compile fuses them into the operands' producers. The plan
# records it, the launcher rounds the products' operands to FP8's precision, and the step
# verifies partitioned against whole.
$PLANNER generate llama $TMP/l.onnx --layers 2 --hidden 2048 --heads 16 --seq 2048 --vocab 32000 > /dev/null
for p in bf16 fp8; do
  for f in torch torch-compile; do
    printf '%-5s %-14s' "$p" "$f"
    $PLANNER plan $TMP/l.onnx --batch 8 --topology dgx-h100 --search data-parallel --precision $p --optimizer adam --framework $f --attention fused --no-progress -o $TMP/p.json | grep -E '^step time' | awk '{print $1 " " $3 " " $4}'
  done
done
python3 -c "import json, sys; o = json.load(open(sys.argv[1]))['search']['options']; print('recorded:', o.get('precision'), o.get('framework'))" $TMP/p.json
$PLANNER plan $TMP/l.onnx --batch 8 --gpus 8 --precision fp8 --topology dgx-a100 --search data-parallel --no-progress -o $TMP/a.json | grep -E '^step time' | awk '{print "A100 (no FP8 tensor cores): " $1 " " $3 " " $4}'
$PLANNER plan $TMP/l.onnx --batch 8 --gpus 8 --precision bf16 --topology dgx-a100 --search data-parallel --no-progress -o $TMP/a.json | grep -E '^step time' | awk '{print "A100 at bf16:               " $1 " " $3 " " $4}'
$PLANNER explain $TMP/p.json --model $TMP/l.onnx | grep -E '^fp8'
$PLANNER compile $TMP/p.json --model $TMP/l.onnx -o $TMP/out > /dev/null && grep -o '"precision": "[a-z0-9]*"' $TMP/out/manifest.json | head -1
$PLANNER generate llama $TMP/t.onnx --layers 2 --hidden 64 --heads 4 --kv-heads 2 --seq 16 --vocab 128 --loss > /dev/null
$PLANNER verify $TMP/t.onnx --batch 4 --gpus 4 --optimizer adam --precision fp8 --attention fused | grep -E '^(precision|ok)'
$PLANNER verify $TMP/t.onnx --batch 4 --gpus 4 --optimizer adam --precision fp8 --search megatron --sequence-parallel | grep -E '^(precision|ok)'
