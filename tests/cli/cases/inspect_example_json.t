# The JSON form of `planner inspect`.
$PLANNER inspect $EXAMPLES/transformer_block.onnxtxt --format json
