# --tensor-parallel pins Megatron's tensor-parallel degree: below a node's GPUs (data parallelism
# over the groups), or above it, tensor parallelism across nodes, whose all-reduces cross the
# NICs and make the step slower than tensor parallelism inside the nodes. The plan records the
# degree and verifies. A degree that does not divide the GPUs, and the megatron-only flags with
# another search, are refused.
$PLANNER generate gpt $TMP/g.onnx --layers 2 --hidden 1024 --heads 16 --seq 256 --vocab 2048 > /dev/null
for t in 4 8 16; do
  printf 'tensor parallel %-3s' $t
  $PLANNER plan $TMP/g.onnx --batch 16 --topology h100-cluster-4x8 --gpus 16 --search megatron --tensor-parallel $t --replicas 1 --precision bf16 --optimizer adam --no-progress -o $TMP/tp$t.json | grep -E '^(step time|note: [0-9]+-way)' | sed -E 's/^step time +([^ ]+ [^ ]+).*/step \1;/' | tr '\n' ' ' | sed 's/ *$//'
  echo
done
python3 -c "import json, sys; o = json.load(open(sys.argv[1]))['search']['options']; print('recorded:', o['tensor_parallel'], 'x', o['nodes'])" $TMP/tp16.json
$PLANNER generate gpt $TMP/t.onnx --layers 1 --hidden 64 --heads 4 --seq 16 --vocab 128 > /dev/null
$PLANNER verify $TMP/t.onnx --batch 4 --topology h100-cluster-4x8 --gpus 16 --search megatron --tensor-parallel 16 --replicas 1 | grep -E '^ok'
$PLANNER plan $TMP/t.onnx --batch 4 --gpus 8 --search megatron --tensor-parallel 3; echo "exit $?"
$PLANNER plan $TMP/t.onnx --batch 4 --gpus 8 --search dp --sequence-parallel; echo "exit $?"
$PLANNER plan $TMP/t.onnx --batch 4 --gpus 8 --search frontier --tensor-parallel 2; echo "exit $?"
