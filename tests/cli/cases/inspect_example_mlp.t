# `planner inspect` on the mlp example (ONNX textual syntax).
$PLANNER inspect $EXAMPLES/mlp.onnxtxt
