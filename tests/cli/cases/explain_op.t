# `planner explain --op`: one operator's options with the rest of the plan fixed, and why the plan's won.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 4 --no-progress -o $TMP/plan.json > /dev/null && $PLANNER explain $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt --op Gemm_2
