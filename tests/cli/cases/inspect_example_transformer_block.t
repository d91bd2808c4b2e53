# `planner inspect` on the transformer_block example (ONNX textual syntax).
$PLANNER inspect $EXAMPLES/transformer_block.onnxtxt
