# show with neither a name nor --gpus.
$PLANNER topology show
