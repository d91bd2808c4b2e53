# The options and the exit codes.
$PLANNER diff --help
