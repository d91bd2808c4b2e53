# A file that does not exist.
$PLANNER topology check $TMP/no_such_topology.json
