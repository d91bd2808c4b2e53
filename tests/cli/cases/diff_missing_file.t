# A plan file that does not exist.
$PLANNER diff tests/cli/data/plans/mlp_dp.json $TMP/nowhere.json
