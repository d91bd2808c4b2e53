# A training plan against an inference plan: the backward and update operators are removed.
$PLANNER diff tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_infer.json
