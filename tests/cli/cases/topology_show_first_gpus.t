# --gpus with a preset: its first N GPUs.
$PLANNER topology show flexflow-p100-4x4 --gpus 6
