# An operator without a TDL description is warned about once per command, however many step
# variants the command tries (here recomputation and sharded state, tried because nothing fits
# 1 MB): the generated decoder's 4,096 x 4,096 causal-mask fill is too large to fold.
$PLANNER generate llama $TMP/l.onnx --layers 1 --hidden 64 --heads 4 --seq 4096 --vocab 128 > /dev/null
$PLANNER plan $TMP/l.onnx --gpus 4 --batch 1 --memory-limit 1MB --no-progress -o $TMP/p.json
