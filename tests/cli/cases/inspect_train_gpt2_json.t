$PLANNER inspect $MODELS/gpt2_small.onnx --mode train --format json
