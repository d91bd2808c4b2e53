# --dump-graph prints the imported graph: roles, static shapes, generated node names.
$PLANNER inspect $EXAMPLES/lstm.onnxtxt --dump-graph
