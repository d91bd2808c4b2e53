# The preset list as JSON.
$PLANNER topology list --format json
