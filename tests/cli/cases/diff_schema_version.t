# A plan of a newer schema version: refused with the version this planner reads.
sed 's/"schema_version": 1/"schema_version": 2/' tests/cli/data/plans/mlp_hybrid.json > $TMP/v2.json
$PLANNER diff tests/cli/data/plans/mlp_dp.json $TMP/v2.json
