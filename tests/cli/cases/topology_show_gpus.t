# --gpus alone: H100s, 8 to a node, the last node partial.
$PLANNER topology show --gpus 12
