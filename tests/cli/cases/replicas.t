# Data parallelism across blocks (--replicas, issues 16 and 17): a generated decoder on 16 GPUs
# as 4 replicas of a 4-GPU plan (dp, megatron and mcmc inside the block; 2 stages and 2
# micro-batches inside it; ZeRO 2 and 3 inside each replica) verifies against the unpartitioned
# step; the plan records the
# replicas; and its figures, from two replicas' compiled step with the cross-replica
# all-reduces priced over all four, are those of the whole 16-rank step compile simulates,
# exactly.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 --dropout 0.1 >/dev/null &&
$PLANNER verify $TMP/tiny.onnx --batch 16 --gpus 16 --replicas 4 --search dp | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 16 --gpus 16 --replicas 4 --search megatron | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 16 --gpus 16 --replicas 4 --pipeline-stages 2 --micro-batches 2 --optimizer adam | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 16 --gpus 16 --replicas 4 --zero 2 --search dp --optimizer adam | grep -v 'step:' &&
$PLANNER verify $TMP/tiny.onnx --batch 16 --gpus 16 --replicas 4 --zero 3 --search mcmc --max-proposals 200 | grep -v 'step:' &&
for s in dp megatron mcmc "dp --zero 2" "mcmc --zero 3"; do
  f=$(echo "$s" | tr -d ' -') &&
  $PLANNER plan $TMP/tiny.onnx --batch 32 --gpus 16 --replicas 4 --search $s --max-proposals 200 --no-fallback -o $TMP/p_$f.json | grep -E 'replicas' &&
  $PLANNER compile $TMP/p_$f.json --model $TMP/tiny.onnx -o $TMP/out_$f >/dev/null &&
  plan=$(grep -m1 -A3 '"predicted"' $TMP/p_$f.json | tr -d ' \n') &&
  comp=$(grep -m1 -A3 '"predicted"' $TMP/out_$f/manifest.json | tr -d ' \n') &&
  { [ "$plan" = "$comp" ] && echo "$s: plan and compile agree" || echo "$s: plan $plan, compile $comp"; }
done &&
grep -m1 -E '"replicas": 4$' $TMP/p_dp.json &&
$PLANNER plan $TMP/tiny.onnx --batch 32 --gpus 16 --replicas 4 -o $TMP/r.json --trace $TMP/r_trace.json --report $TMP/rep >/dev/null &&
grep -o "plans for one replica&#39;s 4 GPUs, repeated 4 times" $TMP/rep/index.html &&
test -s $TMP/r_trace.json && echo "trace of two replicas written"
