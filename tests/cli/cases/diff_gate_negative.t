# A gate takes a percentage of at least 0.
$PLANNER diff tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_hybrid.json --fail-if-slower -5
