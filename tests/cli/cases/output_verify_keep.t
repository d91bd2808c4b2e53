# `verify --keep DIR` writes only into a new, empty or earlier verify folder, never the working folder or a folder holding an input.
mkdir $TMP/mine && echo keep > $TMP/mine/notes.txt
$PLANNER verify $EXAMPLES/mlp.onnxtxt --gpus 2 --keep $TMP/mine; echo "[exit $?]"
$PLANNER verify $EXAMPLES/mlp.onnxtxt --gpus 2 --keep $EXAMPLES; echo "[exit $?]"
$PLANNER verify $EXAMPLES/mlp.onnxtxt --gpus 2 --keep .; echo "[exit $?]"
ls -A $TMP/mine
