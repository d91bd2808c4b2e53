# A plan against itself: no changes, every delta +0.0%.
$PLANNER diff tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_dp.json
