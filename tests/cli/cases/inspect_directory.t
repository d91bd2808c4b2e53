# A directory given as the model.
$PLANNER inspect $TMP
