# --shrink errors: a malformed map, and a map that breaks the model's shapes.
$PLANNER inspect $EXAMPLES/mlp.onnxtxt --shrink 1024=0
$PLANNER inspect $EXAMPLES/mlp.onnxtxt --shrink 64=4,64=8
$PLANNER inspect $EXAMPLES/transformer_block.onnxtxt --shrink 64=32
