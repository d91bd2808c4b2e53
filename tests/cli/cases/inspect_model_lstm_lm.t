# `planner inspect` on the shared lstm_lm model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/lstm_lm.onnx
