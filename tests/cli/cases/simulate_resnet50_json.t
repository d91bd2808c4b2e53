$PLANNER simulate $MODELS/resnet50.onnx --topology flexflow-p100-4x4 --format json
