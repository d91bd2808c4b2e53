$PLANNER inspect $TMP/no_such_model.onnx
