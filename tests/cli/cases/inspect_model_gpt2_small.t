# `planner inspect` on the shared gpt2_small model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/gpt2_small.onnx
