# Recompute and sharded-state (ZeRO-2) plans compile and verify on 4 ranks like any other,
# with Adam too (a parameter whose gradient is rounding alone may turn its update).
$PLANNER verify $EXAMPLES/transformer_block.onnxtxt --gpus 4 --recompute all --search mcmc --max-proposals 100 | grep -v 'step:'
$PLANNER verify $EXAMPLES/transformer_block.onnxtxt --gpus 4 --search fsdp --optimizer adam | grep -v 'step:'
$PLANNER verify $EXAMPLES/small_cnn.onnxtxt --gpus 4 --search dp --zero 2 --recompute all --optimizer momentum | grep -v 'step:'
$PLANNER verify $EXAMPLES/lstm.onnxtxt --gpus 2 --search fsdp --recompute all --precision bf16 | grep -v 'step:'
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 4 --zero 1 -o $TMP/p.json 2>&1 | head -1; echo "[${PIPESTATUS[0]}]"
