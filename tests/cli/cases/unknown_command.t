# A mistyped command gets a suggestion and exit code 2.
$PLANNER inspct model.onnx
