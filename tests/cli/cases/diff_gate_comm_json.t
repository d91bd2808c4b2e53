# A communication gate tripping, with --format json: the gates are in the output too.
set -o pipefail
$PLANNER diff --format json tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_hybrid.json --fail-if-more-comm 10 | grep -A 30 '"gates"'
