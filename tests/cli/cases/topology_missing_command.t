# `planner topology` alone says which commands there are.
$PLANNER topology
