# Inputs that are not regular files (a FIFO, /dev/zero, a folder) or too large are refused at once with one line; nothing blocks or fills memory.
mkfifo $TMP/fifo && truncate -s 2G $TMP/sparse.json
timeout 20 $PLANNER topology check $TMP/fifo; echo "[exit $?]"
timeout 20 $PLANNER topology check $TMP/sparse.json; echo "[exit $?]"
timeout 20 $PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --costs /dev/zero; echo "[exit $?]"
timeout 20 $PLANNER simulate $EXAMPLES/mlp.onnxtxt --topology $TMP/fifo; echo "[exit $?]"
timeout 20 $PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --tdl $TMP/fifo; echo "[exit $?]"
timeout 20 $PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --calibration $TMP/fifo; echo "[exit $?]"
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --calibration $TMP/sparse.json --trace $TMP/sparse.json; echo "[exit $?]"
timeout 20 $PLANNER tdl check $TMP; echo "[exit $?]"
timeout 20 $PLANNER tdl check $TMP/fifo; echo "[exit $?]"
timeout 20 $PLANNER diff $TMP/fifo tests/cli/data/plans/mlp_dp.json; echo "[exit $?]"
timeout 20 $PLANNER inspect $TMP/fifo; echo "[exit $?]"
timeout 20 $PLANNER compile tests/cli/data/plans/mlp_dp.json --model $TMP/fifo -o $TMP/out; echo "[exit $?]"
