# `compile -o DIR` where DIR holds a user's file and no compile marker: one line before any work, exit 1, the folder untouched; a new folder, then the same folder again (an earlier compile output, marked), are written.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --no-progress -o $TMP/plan.json > /dev/null
mkdir $TMP/mine && echo keep > $TMP/mine/notes.txt
$PLANNER compile $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt -o $TMP/mine; echo "[exit $?]"
ls -A $TMP/mine; cat $TMP/mine/notes.txt
$PLANNER compile $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt -o $TMP/out > /dev/null; echo "[exit $?]"
touch $TMP/out/built-by-user
$PLANNER compile $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt -o $TMP/out/ | tail -1; echo "[exit ${PIPESTATUS[0]}]"
ls -A $TMP/out; ls -A $TMP
