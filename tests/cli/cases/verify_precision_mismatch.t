# verify --plan with a --precision other than the plan's: one line naming the plan, exit 1.
$PLANNER verify $EXAMPLES/mlp.onnxtxt --plan tests/cli/data/plans/mlp_dp.json --precision fp16
