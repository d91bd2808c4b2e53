# --dump-after plan on simulate: the baseline's config of every operator, in step order.
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 4 --mode infer --strategy model-parallel --dump-after plan
