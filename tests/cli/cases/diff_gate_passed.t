# Faster, smaller, and 14% more communication within a 20% gate: exit 0.
$PLANNER diff tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_hybrid.json --fail-if-slower 0 --fail-if-more-memory 0 --fail-if-more-comm 20 > /dev/null
