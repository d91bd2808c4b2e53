# The same model planned for 8 and for 32 GPUs: compared, and the header says the topology changed.
$PLANNER diff tests/cli/data/plans/mlp_dp.json tests/cli/data/plans/mlp_dp_32.json
