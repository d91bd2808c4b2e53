# `explain` and `compile` without --model find the file the plan names next to the plan (or in the working folder), checked by its SHA-256; otherwise one line says where they looked.
cp $EXAMPLES/mlp.onnxtxt $TMP/mlp.onnxtxt && $PLANNER plan $TMP/mlp.onnxtxt --gpus 2 --no-progress -o $TMP/plan.json > /dev/null
$PLANNER explain $TMP/plan.json --top 2 | head -2
mkdir $TMP/elsewhere && cp $TMP/plan.json $TMP/elsewhere/plan.json
$PLANNER compile $TMP/elsewhere/plan.json -o $TMP/out; echo "[exit $?]"
echo "# changed" >> $TMP/mlp.onnxtxt && cp $TMP/mlp.onnxtxt $TMP/elsewhere/mlp.onnxtxt
$PLANNER explain $TMP/elsewhere/plan.json; echo "[exit $?]"
