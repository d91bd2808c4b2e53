# The example file p2.8xlarge.json validates.
$PLANNER topology check $EXAMPLES/topologies/p2.8xlarge.json
