# The hybrid plan replaced by data parallelism: 11% slower trips a 5% gate (exit 3); memory stays within 30%.
$PLANNER diff tests/cli/data/plans/mlp_hybrid.json tests/cli/data/plans/mlp_dp.json --fail-if-slower 5 --fail-if-more-memory 30
