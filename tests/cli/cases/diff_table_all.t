# --all lists every change instead of the first ten of each list.
$PLANNER diff --all tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_hybrid.json
