# Asking for more GPUs than a topology has.
$PLANNER topology show dgx-h100 --gpus 9
