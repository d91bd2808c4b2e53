# --threads is bounded (1 to 256): 2000 threads are refused with one line, nothing written.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --threads 2000 -o $TMP/plan.json; echo "exit $?"
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --threads 0 -o $TMP/plan.json; echo "exit $?"
test ! -e $TMP/plan.json
