# A plan that cannot fit: one clear line, the smallest memory found, a GPU count that would fit, exit 4, no file.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --memory-limit 1MiB --no-progress -o $TMP/plan.json; s=$?; test -e $TMP/plan.json && echo "plan file written"; exit $s
