$PLANNER simulate $EXAMPLES/small_cnn.onnxtxt --gpus 4 --strategy model-parallel --mode infer
