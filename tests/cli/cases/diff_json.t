# The same comparison for programs: every change, exact values, percentages (null without a base).
$PLANNER diff --format json tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_hybrid.json
