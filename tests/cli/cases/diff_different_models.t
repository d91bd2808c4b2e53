# Plans of two different models: one line naming both, not a wall of changes.
$PLANNER diff tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/small_cnn_infer.json
