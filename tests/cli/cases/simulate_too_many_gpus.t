# A topology with fewer GPUs than asked for.
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --topology dgx-h100 --gpus 16
