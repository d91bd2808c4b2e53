# The training step of the example MLP, as the pipeline sees it after the training-graph stage.
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --dump-after train
