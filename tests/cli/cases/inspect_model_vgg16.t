# `planner inspect` on the shared vgg16 model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/vgg16.onnx
