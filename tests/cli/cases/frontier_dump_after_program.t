# --dump-after plan and program belong to the commands that make a plan.
$PLANNER frontier $EXAMPLES/mlp.onnxtxt --gpus 2 --dump-after program
