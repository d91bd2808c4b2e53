# `planner inspect` on the lstm example (ONNX textual syntax).
$PLANNER inspect $EXAMPLES/lstm.onnxtxt
