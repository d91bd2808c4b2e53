# A file that is not a protobuf at all.
printf 'this is not a model\n' > $TMP/garbage.onnx
$PLANNER inspect $TMP/garbage.onnx
