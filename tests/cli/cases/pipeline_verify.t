# Pipeline stages (issue 16): a generated decoder with Dropout on 2 and 4 stages, 4 micro-batches,
# GPipe and 1F1B, under dp, megatron inside the stages, and fsdp with Adam and recomputation,
# verifies against the unpartitioned step; the plan records the stages and the schedule; and
# the figures plan gives for 8 micro-batches (the step of 4 extended, program_metrics) agree
# with compile's (the whole pipelined step simulated): time within 1%, memory within 5%, never
# below.
$PLANNER generate gpt $TMP/tiny.onnx --layers 4 --hidden 64 --heads 4 --seq 16 --vocab 128 --dropout 0.1 >/dev/null &&
$PLANNER verify $TMP/tiny.onnx --batch 8 --micro-batches 4 --gpus 4 --pipeline-stages 2 --schedule gpipe --search dp | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 8 --micro-batches 4 --gpus 8 --pipeline-stages 4 --schedule 1f1b | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 8 --micro-batches 4 --gpus 8 --pipeline-stages 2 --schedule 1f1b --search megatron | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 8 --micro-batches 4 --gpus 8 --pipeline-stages 4 --schedule gpipe --search fsdp --optimizer adam --recompute all | grep -v 'step:' &&
$PLANNER plan $TMP/tiny.onnx --batch 16 --micro-batches 8 --gpus 4 --pipeline-stages 2 -o $TMP/p.json | grep -E '^(pipeline|batch) ' &&
grep -E '"(pipeline_stages|schedule|micro_batches)"' $TMP/p.json &&
$PLANNER compile $TMP/p.json --model $TMP/tiny.onnx -o $TMP/out >/dev/null &&
plan_t=$(grep -A1 '"predicted"' $TMP/p.json | sed -n 's/.*"step_time_s": \([0-9.e+-]*\).*/\1/p') &&
plan_m=$(grep -A2 '"predicted"' $TMP/p.json | sed -n 's/.*"peak_memory_bytes": \([0-9]*\).*/\1/p') &&
comp_t=$(grep -A1 '"predicted"' $TMP/out/manifest.json | sed -n 's/.*"step_time_s": \([0-9.e+-]*\).*/\1/p') &&
comp_m=$(grep -A2 '"predicted"' $TMP/out/manifest.json | sed -n 's/.*"peak_memory_bytes": \([0-9]*\).*/\1/p') &&
awk -v a="$plan_t" -v b="$comp_t" -v c="$plan_m" -v d="$comp_m" 'BEGIN {
  t = a / b - 1; m = c / d - 1; if (t < 0) t = -t;
  print (t <= 0.01 && m >= 0 && m <= 0.05) ? "plan and compile agree" : "plan " a " s " c " B, compile " b " s " d " B" }'
