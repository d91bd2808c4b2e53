# Valid JSON, invalid plan: a configuration with too few devices, named by its JSON path.
sed '0,/"config": "{m:2,n:4}@0-7"/s//"config": "{m:2,n:4}@0-6"/' tests/cli/data/plans/mlp_hybrid.json > $TMP/bad.json
$PLANNER diff tests/cli/data/plans/mlp_dp.json $TMP/bad.json
