# An empty model file is one clear error line.
: > $TMP/empty.onnx
$PLANNER inspect $TMP/empty.onnx
