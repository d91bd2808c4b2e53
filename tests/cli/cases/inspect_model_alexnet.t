# `planner inspect` on the shared alexnet model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/alexnet.onnx
