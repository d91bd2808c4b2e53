# A data-parallel plan against a hybrid one: header, metrics, changed operators and tensors.
$PLANNER diff tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_hybrid.json
