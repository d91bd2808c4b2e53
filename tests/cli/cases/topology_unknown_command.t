# A mistyped topology command gets a suggestion and exit code 2.
$PLANNER topology lst
