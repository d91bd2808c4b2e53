# A model that does not exist: one line and a non-zero exit.
$PLANNER compare $EXAMPLES/missing.onnxtxt --gpus 4
