# --dump-after strategies: each operator of the LSTM training step, its valid splits and the
# invalid ones with why (the sequence of a recurrence is never split).
$PLANNER plan $EXAMPLES/lstm.onnxtxt --gpus 4 --dump-after strategies
