# --framework prices kernels as a framework fuses them (docs/cost-model.md, "Fused kernels"): a
# generated GPT's step on one DGX A100 under Megatron-LM's tensor parallelism is cheaper as
# Megatron runs it (fused bias-GELU, scale-mask-softmax, bias-dropout-add) than with every
# operator its own kernel, and cheaper still under torch.compile; eager torch fuses least. The
# plan records the framework, so explain and compile price the step the same way without the
# flag. An unknown framework is refused.
$PLANNER generate gpt $TMP/g.onnx --layers 2 --hidden 512 --heads 8 --seq 512 --vocab 4096 --dropout 0.1 > /dev/null
for f in none torch megatron torch-compile; do
  printf '%-14s' $f
  $PLANNER plan $TMP/g.onnx --batch 8 --topology dgx-a100 --search megatron --precision bf16 --optimizer adam --recompute all --framework $f --no-progress -o $TMP/$f.json | grep '^step time' | awk '{print $3, $4}'
done
python3 -c "import json, sys; print('recorded:', json.load(open(sys.argv[1]))['search']['options'].get('framework'))" $TMP/megatron.json
$PLANNER explain $TMP/megatron.json --model $TMP/g.onnx | grep '^predicted'
$PLANNER compile $TMP/megatron.json --model $TMP/g.onnx -o $TMP/out | grep -E '^(note|predicted)'
$PLANNER plan $TMP/g.onnx --batch 8 --framework jax
