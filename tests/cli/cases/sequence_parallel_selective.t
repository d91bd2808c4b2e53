# Megatron-LM's 2022 step (Korthikanti et al.): selective recomputation recomputes only the
# attention cores (five operators per layer of this GPT: the scores' product, scale, mask,
# softmax, dropout), costing less than full recomputation and keeping more; sequence
# parallelism splits what tensor parallelism leaves whole along the sequence, so each layer's
# all-reduces become an all-gather before and a reduce-scatter after the tensor-parallel blocks
# and the norms' activations shrink. The plan records both, explain names the recomputation,
# and the step verifies partitioned against whole (with a pipeline and replicas too; there at
# learning rate 0.001: in Adam's second step an element whose gradient is near Adam's epsilon
# moves by a share of lr that the sum's rounding changes, 1.2 of fp32's tolerance at lr 0.01,
# scaling with lr; SGD's step agrees within 0.3 of it).
$PLANNER generate gpt $TMP/g.onnx --layers 2 --hidden 512 --heads 8 --seq 512 --vocab 4096 --dropout 0.1 > /dev/null
for step in "--recompute none" "--recompute selective" "--recompute all" "--recompute selective --sequence-parallel"; do
  printf '%-42s' "$step"
  $PLANNER plan $TMP/g.onnx --batch 8 --topology dgx-a100 --search megatron --precision bf16 --optimizer adam --framework megatron $step --no-progress -o $TMP/p.json | grep -E '^(step time|peak memory)' | awk '{s = s (NR > 1 ? ", " : "") $1 " " $3 " " $4} END {print s}'
done
python3 -c "import json, sys; o = json.load(open(sys.argv[1]))['search']['options']; print('recorded:', o.get('recompute'), o.get('sequence_parallel'))" $TMP/p.json
$PLANNER explain $TMP/p.json --model $TMP/g.onnx | grep '^recompute'
for sp in "" "--sequence-parallel"; do
  $PLANNER plan $TMP/g.onnx --batch 8 --topology dgx-a100 --search megatron --recompute selective $sp --dump-after program > $TMP/prog.txt
  awk '/^rank 0$/{f=1; next} /^rank /{f=0} f' $TMP/prog.txt > $TMP/rank0
  echo "${sp:-tensor parallel}: rank 0 runs $(grep -c '^  all_reduce' $TMP/rank0) all-reduces, $(grep -c '^  all_gather' $TMP/rank0) all-gathers, $(grep -c '^  reduce_scatter' $TMP/rank0) reduce-scatters"
done
$PLANNER generate gpt $TMP/t.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 --dropout 0.1 > /dev/null
$PLANNER verify $TMP/t.onnx --batch 4 --gpus 4 --optimizer adam --search megatron --recompute selective --sequence-parallel | grep -E '^ok'
$PLANNER verify $TMP/t.onnx --batch 8 --gpus 8 --optimizer adam --search megatron --recompute selective --sequence-parallel --pipeline-stages 2 --replicas 2 --micro-batches 2 --lr 0.001 | grep -E '^ok'
$PLANNER plan $TMP/t.onnx --batch 4 --gpus 4 --recompute some; echo "exit $?"
