# `planner plan` on the example MLP: the summary beside data parallelism (search time masked).
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 8 --no-progress -o $TMP/plan.json | sed 's/^search \(.*\), .*/search \1, <time>/' && head -c 0 $TMP/plan.json
