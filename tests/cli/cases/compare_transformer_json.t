# The example transformer block on two nodes of 8 GPUs, as JSON: megatron's tensor parallelism
# inside the nodes against the searches.
$PLANNER compare $EXAMPLES/transformer_block.onnxtxt --gpus 16 --max-proposals 100 --budget 60 --no-timings --format json
