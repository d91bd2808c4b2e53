# The built-in topologies: name, GPUs, nodes, description.
$PLANNER topology list
