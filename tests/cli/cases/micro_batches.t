# Micro-batches with gradient accumulation (issue 16): a generated decoder with Dropout, the
# global batch 8 in 4 passes of 2, verifies under megatron and under fsdp with Adam and
# recomputation; the plan file records the passes, and plan, explain, diff and verify --plan
# read them back.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 --dropout 0.1 >/dev/null &&
$PLANNER verify $TMP/tiny.onnx --batch 8 --micro-batches 4 --gpus 4 --search megatron | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 8 --micro-batches 2 --gpus 4 --search fsdp --optimizer adam --recompute all | grep -v 'step:' &&
$PLANNER plan $TMP/tiny.onnx --batch 8 --micro-batches 4 --gpus 4 --search data-parallel -o $TMP/p.json | grep '^batch' &&
$PLANNER plan $TMP/tiny.onnx --batch 8 --gpus 4 --search data-parallel -o $TMP/q.json >/dev/null &&
$PLANNER diff $TMP/q.json $TMP/p.json | grep '^step' &&
$PLANNER explain $TMP/p.json | grep '^batch' &&
$PLANNER verify $TMP/tiny.onnx --plan $TMP/p.json | grep -v 'step:'
