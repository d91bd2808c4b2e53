# The example file a100-pcie-2node.json validates.
$PLANNER topology check $EXAMPLES/topologies/a100-pcie-2node.json
