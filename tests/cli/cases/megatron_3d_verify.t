# megatron-3d chooses its own pipeline stage count on a training graph built for one stage: the
# plan records that graph (pipelined_gradients false: the tied embedding read across stages,
# its gradient parts summed in the backward pass), so verify and compile rebuild the step it
# planned and it verifies; a plan pinned to stages records nothing (the head keeps its own copy
# of the embedding). A hand-edited value that is no boolean is refused with its path.
$PLANNER generate gpt $TMP/t.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 --dropout 0.1 > /dev/null
$PLANNER plan $TMP/t.onnx --batch 8 --gpus 8 --optimizer adam --search megatron-3d --micro-batches 2 --no-progress -o $TMP/m3.json | grep -E '^note: pipeline stages tried'
python3 -c "import json, sys; o = json.load(open(sys.argv[1]))['search']['options']; print('recorded:', o['pipeline_stages'], 'stages, pipelined_gradients', o.get('pipelined_gradients'))" $TMP/m3.json
$PLANNER verify $TMP/t.onnx --plan $TMP/m3.json | grep -E '^ok'
$PLANNER plan $TMP/t.onnx --batch 8 --gpus 8 --optimizer adam --search megatron --pipeline-stages 2 --micro-batches 2 --no-progress -o $TMP/m2.json > /dev/null
python3 -c "import json, sys; o = json.load(open(sys.argv[1]))['search']['options']; print('recorded:', o['pipeline_stages'], 'stages, pipelined_gradients', o.get('pipelined_gradients'))" $TMP/m2.json
$PLANNER verify $TMP/t.onnx --plan $TMP/m2.json | grep -E '^ok'
python3 -c "import json, sys; p = json.load(open(sys.argv[1])); p['search']['options']['pipelined_gradients'] = 'no'; json.dump(p, open(sys.argv[2], 'w'))" $TMP/m3.json $TMP/bad.json
$PLANNER verify $TMP/t.onnx --plan $TMP/bad.json; echo "exit $?"
