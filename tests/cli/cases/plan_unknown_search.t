# A misspelt search: the names and a suggestion.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 8 --search fronteir --no-progress -o $TMP/plan.json
