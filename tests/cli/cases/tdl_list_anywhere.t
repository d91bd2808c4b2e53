# The operator library is embedded in the binary: the planner finds it from any directory.
cd $TMP && $PLANNER tdl list --format json | grep -c '"op"' && $PLANNER tdl show ShiftTwo --sizes N=12 | head -2
