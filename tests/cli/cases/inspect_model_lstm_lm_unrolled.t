# `planner inspect` on the shared lstm_lm_unrolled model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/lstm_lm_unrolled.onnx
