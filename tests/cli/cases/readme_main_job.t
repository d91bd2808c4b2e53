# The README's main job: GPT-3 6.7B on 8 H100s, where data parallelism does not fit; the plan
# uses all 8 GPUs and records where the model is.
cd $TMP && $PLANNER generate gpt gpt.onnx --preset gpt3-6.7b && $PLANNER plan gpt.onnx --batch 8 --gpus 8 --precision bf16 --optimizer adam -o plan.json | grep -v '^search' &&
python3 -c 'import json; p = json.load(open("plan.json")); print("model path", p["model"]["path"]); print("GPUs used", len({d for op in p["ops"] for d in op["devices"]}), "of", p["topology"]["num_devices"])'
