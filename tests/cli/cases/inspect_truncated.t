# A truncated copy of a real model is reported as truncated, not as garbage.
head -c 1000 $MODELS/resnet50.onnx > $TMP/resnet50.onnx
$PLANNER inspect $TMP/resnet50.onnx
