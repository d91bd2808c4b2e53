# A plan compiled against another model: one line, exit 1, nothing written.
$PLANNER compile tests/cli/data/plans/mlp_dp.json --model $EXAMPLES/small_cnn.onnxtxt -o $TMP/out || { echo "exit $?"; ls $TMP; false; }
