# `planner frontier` across GPU counts, with CSV and SVG.
$PLANNER frontier $EXAMPLES/mlp.onnxtxt --gpus 1,2,4 --no-progress --csv $TMP/f.csv --svg $TMP/f.svg && head -3 $TMP/f.csv && grep -c '<circle' $TMP/f.svg
