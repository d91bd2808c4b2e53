# A budget past what the clock counts (about 9.2e9 s of nanoseconds) is no bound, not a deadline wrapped into the past: dp plans, mcmc makes its proposals. NaN and infinity are refused (a plan would record them as null), exit 1 as every bad flag value.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 4 --search dp --budget 1e10 --no-progress -o $TMP/dp.json | head -2; echo "[exit ${PIPESTATUS[0]}]"
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 4 --search mcmc --budget 1e300 --max-proposals 50 --no-progress -o $TMP/p.json > /dev/null; echo "[exit $?]"
grep -o '"proposals": [0-9]*' $TMP/p.json
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 4 --search frontier --budget 1e300 --no-progress -o $TMP/f.json | head -1; echo "[exit ${PIPESTATUS[0]}]"
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 4 --budget nan -o $TMP/n.json; echo "[exit $?]"
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 4 --budget inf -o $TMP/n.json; echo "[exit $?]"
test ! -e $TMP/n.json && echo "nothing written"
