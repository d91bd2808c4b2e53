# Data parallelism of the example MLP on four H100s, with a trace.
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 4 --trace $TMP/trace.json && test -s $TMP/trace.json && echo trace written
