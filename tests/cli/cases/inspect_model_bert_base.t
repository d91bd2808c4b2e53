# `planner inspect` on the shared bert_base model (graph-only export: its weights file is absent).
$PLANNER inspect $MODELS/bert_base.onnx
