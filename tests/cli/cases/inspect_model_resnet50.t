# `planner inspect` on the shared resnet50 model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/resnet50.onnx
