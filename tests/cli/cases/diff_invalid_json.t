# Broken JSON: file, line and column.
printf '%s\n' '{' '  "schema_version": 1,' '  "model": {"name": "mlp",}' '}' > $TMP/broken.json
$PLANNER diff $TMP/broken.json tests/cli/data/plans/mlp_dp.json
