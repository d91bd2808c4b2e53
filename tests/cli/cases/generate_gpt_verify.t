# A small generated decoder with training-mode Dropout imports, plans and verifies on 4 ranks.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 --dropout 0.1 &&
$PLANNER inspect $TMP/tiny.onnx --batch 4 | head -4 &&
$PLANNER verify $TMP/tiny.onnx --batch 4 --gpus 4 --search megatron | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 4 --gpus 4 --search dp --precision bf16 | grep -v 'step:'
