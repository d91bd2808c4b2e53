# GPT-3 175B, graph only: imports and plans on this machine (Megatron tensor parallelism over
# a DGX H100 does not fit: the error says so and by how much).
$PLANNER generate gpt $TMP/gpt175b.onnx --preset gpt3-175b &&
$PLANNER inspect $TMP/gpt175b.onnx --batch 1 | sed -n 1,6p &&
$PLANNER plan $TMP/gpt175b.onnx --batch 8 --gpus 8 --search megatron --precision bf16 --optimizer adam -o $TMP/p.json
