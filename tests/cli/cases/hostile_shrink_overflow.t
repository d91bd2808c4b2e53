# Totals that overflow int64 saturate instead of wrapping (was "-4096.0 PiB").
$PLANNER inspect $EXAMPLES/mlp.onnxtxt --shrink 1024=1073741824
