# --dump-after groups: the groups the searches cut, their leader, size and splittable variables.
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 4 --dump-after groups
