# `planner inspect` on the small_cnn example (ONNX textual syntax).
$PLANNER inspect $EXAMPLES/small_cnn.onnxtxt
