# Communication from 0 bytes (an inference plan) has no percentage: any growth trips the gate.
$PLANNER diff tests/cli/data/plans/mlp_infer.json tests/cli/data/plans/mlp_dp.json --fail-if-more-comm 1000 > /dev/null
