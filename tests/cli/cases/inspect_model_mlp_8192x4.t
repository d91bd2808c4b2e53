# `planner inspect` on the shared mlp_8192x4 model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/mlp_8192x4.onnx
