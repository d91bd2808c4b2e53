# `planner inspect` on the shared inception_v3 model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/inception_v3.onnx
