# The compact JSON form of a preset, as topology files are written.
$PLANNER topology show h100-cluster-4x8 --format json
