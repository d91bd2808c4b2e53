# The example file h100-rails-2x8.json validates.
$PLANNER topology check $EXAMPLES/topologies/h100-rails-2x8.json
