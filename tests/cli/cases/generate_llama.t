# A LLaMA-style decoder (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention): the
# presets' parameter counts are the published ones (LLaMA 7B 6,738,415,616; Llama 2 70B
# 68,976,648,192); a small one imports, and plans and verifies on 4 ranks (tensor parallel,
# and bf16 with recomputation); bad sizes are one line naming the flag.
$PLANNER generate llama --list
$PLANNER generate llama $TMP/ll.onnx --layers 2 --hidden 64 --heads 8 --kv-heads 2 --seq 32 --vocab 128 &&
$PLANNER inspect $TMP/ll.onnx --batch 4 | sed -n 2,3p &&
$PLANNER verify $TMP/ll.onnx --batch 4 --gpus 4 --search megatron | grep -v 'step:' &&
$PLANNER verify $TMP/ll.onnx --batch 4 --gpus 4 --search dp --precision bf16 --recompute all | grep -v 'step:'
$PLANNER generate llama $TMP/x.onnx --heads 8 --kv-heads 3; echo "[$?]"
$PLANNER generate llama $TMP/x.onnx --hidden 96 --heads 32; echo "[$?]"
$PLANNER generate gpt $TMP/x.onnx --kv-heads 2; echo "[$?]"
