# Plans are byte-identical whatever the thread count (issue 17): every search, a pipeline, a
# frontier, sharded state and replicas, planned with 1, 2, 3 and 8 worker threads.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 --dropout 0.1 >/dev/null &&
check() {
  name=$1; shift
  for t in 1 2 3 8; do
    $PLANNER plan "$@" --threads $t --no-progress -o $TMP/$name.$t.json >/dev/null 2>&1 || { echo "$name: plan failed with --threads $t"; return; }
  done
  for t in 2 3 8; do
    cmp -s $TMP/$name.1.json $TMP/$name.$t.json || { echo "$name: --threads $t differs from --threads 1"; return; }
  done
  echo "$name: identical"
}
check mlp_dp $EXAMPLES/mlp.onnxtxt --gpus 8 --search dp
check cnn_mcmc $EXAMPLES/small_cnn.onnxtxt --gpus 4 --search mcmc --max-proposals 300
check block_frontier $EXAMPLES/transformer_block.onnxtxt --gpus 8 --search frontier
check lstm_dp $EXAMPLES/lstm.onnxtxt --gpus 4 --search dp --mode infer
check gpt_pipeline $TMP/tiny.onnx --batch 16 --gpus 8 --pipeline-stages 2 --micro-batches 4
check gpt_zero3 $TMP/tiny.onnx --batch 16 --gpus 8 --zero 3 --optimizer adam
check gpt_megatron3d $TMP/tiny.onnx --batch 16 --gpus 8 --search megatron-3d
check gpt_replicas $TMP/tiny.onnx --batch 32 --gpus 16 --replicas 4 --search mcmc --max-proposals 200
