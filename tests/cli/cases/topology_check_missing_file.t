$PLANNER topology check $TMP/no_such_topology.json
