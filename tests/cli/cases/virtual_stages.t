# --virtual-stages V (Megatron-LM's interleaved 1F1B): the model is cut into stages x V chunks,
# chunk j on stage j % stages, so each stage holds V chunks and the bubble shrinks V times at
# the price of V times the messages between stages. plan, simulate, compile, explain and diff
# read the choice from the plan; the step verifies partitioned against whole with tensor and
# sequence parallelism, replicas, recomputation, ZeRO-3 and fused attention inside the stages.
$PLANNER generate gpt $TMP/g.onnx --layers 8 --hidden 64 --heads 4 --seq 16 --vocab 128 > /dev/null
for v in 1 2 4; do
  printf 'virtual %s: ' "$v"
  $PLANNER plan $TMP/g.onnx --batch 16 --micro-batches 8 --gpus 8 --pipeline-stages 4 --virtual-stages $v --search megatron --tensor-parallel 2 --optimizer adam --no-progress -o $TMP/v$v.json | grep -E '^(pipeline|step time)' | awk '{s = s (NR > 1 ? "; " : "") $0} END {print s}' | tr -s ' '
done
$PLANNER plan $TMP/g.onnx --batch 16 --micro-batches 8 --gpus 8 --pipeline-stages 4 --virtual-stages 2 --search megatron --tensor-parallel 2 --optimizer adam --no-progress -o $TMP/v2.json | grep -o 'forward operator groups per chunk: .*'
python3 -c "import json, sys; o = json.load(open(sys.argv[1]))['search']['options']; print('recorded:', o['pipeline_stages'], o['virtual_stages'], o['schedule'])" $TMP/v2.json
$PLANNER explain $TMP/v2.json --model $TMP/g.onnx | grep '^pipeline'
$PLANNER diff $TMP/v1.json $TMP/v2.json | grep -E '^(step|  step time|  peak memory|  communication)'
$PLANNER compile $TMP/v2.json --model $TMP/g.onnx -o $TMP/out > /dev/null && echo compiled
$PLANNER simulate $TMP/g.onnx --batch 16 --micro-batches 8 --gpus 4 --pipeline-stages 2 --virtual-stages 2 | grep '^pipeline'
$PLANNER verify $TMP/g.onnx --plan $TMP/v2.json | grep -E '^(verify|ok)'
$PLANNER verify $TMP/g.onnx --batch 16 --gpus 8 --optimizer adam --pipeline-stages 2 --micro-batches 4 --virtual-stages 2 --replicas 2 --search megatron --sequence-parallel --recompute all | grep -E '^ok'
$PLANNER verify $TMP/g.onnx --batch 16 --gpus 8 --optimizer adam --pipeline-stages 2 --micro-batches 4 --virtual-stages 2 --zero 3 --search dp | grep -E '^ok'
$PLANNER verify $TMP/g.onnx --batch 16 --gpus 4 --optimizer adam --pipeline-stages 4 --micro-batches 4 --virtual-stages 2 --schedule gpipe --search dp | grep -E '^(verify|ok)'
$PLANNER generate llama $TMP/l.onnx --layers 4 --hidden 64 --heads 4 --kv-heads 2 --seq 16 --vocab 128 --loss > /dev/null
$PLANNER verify $TMP/l.onnx --batch 16 --gpus 4 --optimizer adam --pipeline-stages 2 --micro-batches 4 --virtual-stages 2 --search megatron --attention fused --precision bf16 --recompute ops | grep -E '^ok'
# Refused: no stages to interleave (megatron-3d, which picks its stage count, too),
# micro-batches that are not a multiple of the stages, and a hand-edited plan that says either.
$PLANNER plan $TMP/g.onnx --batch 16 --gpus 4 --virtual-stages 2; echo "exit $?"
$PLANNER plan $TMP/g.onnx --batch 16 --gpus 8 --micro-batches 8 --virtual-stages 2 --search megatron-3d; echo "exit $?"
$PLANNER plan $TMP/g.onnx --batch 24 --gpus 4 --pipeline-stages 4 --micro-batches 6 --virtual-stages 2; echo "exit $?"
python3 -c "import json, sys; p = json.load(open(sys.argv[1])); p['search']['options']['pipeline_stages'] = 1; json.dump(p, open(sys.argv[2], 'w'))" $TMP/v2.json $TMP/bad.json
$PLANNER explain $TMP/bad.json --model $TMP/g.onnx 2> $TMP/err > /dev/null; echo "exit $?"; sed "s|$TMP/||g" $TMP/err
python3 -c "import json, sys; p = json.load(open(sys.argv[1])); p['search']['options']['micro_batches'] = 6; p['search']['options']['batch'] = 24; json.dump(p, open(sys.argv[2], 'w'))" $TMP/v2.json $TMP/bad.json
$PLANNER explain $TMP/bad.json --model $TMP/g.onnx 2> $TMP/err > /dev/null; echo "exit $?"; sed "s|$TMP/||g" $TMP/err
