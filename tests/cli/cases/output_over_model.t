# Every file output named as the input model (or as ./MODEL, or through a hard link): one line, exit 1, before any work, and the model unchanged.
cp $EXAMPLES/mlp.onnxtxt $TMP/m.onnxtxt && cd $TMP && before=$(md5sum m.onnxtxt)
$PLANNER plan m.onnxtxt --gpus 4 --no-progress -o m.onnxtxt; echo "[exit $?]"
$PLANNER plan m.onnxtxt --gpus 4 --no-progress -o plan.json --trace ./m.onnxtxt; echo "[exit $?]"
$PLANNER plan m.onnxtxt --gpus 4 --no-progress -o plan.json --report .; echo "[exit $?]"
$PLANNER frontier m.onnxtxt --gpus 4 --no-progress --csv m.onnxtxt; echo "[exit $?]"
$PLANNER frontier m.onnxtxt --gpus 4 --no-progress --svg $TMP/m.onnxtxt; echo "[exit $?]"
$PLANNER simulate m.onnxtxt --gpus 4 --trace m.onnxtxt; echo "[exit $?]"
ln m.onnxtxt twin.onnxtxt
$PLANNER simulate m.onnxtxt --gpus 4 --trace twin.onnxtxt; echo "[exit $?]"
$PLANNER plan m.onnxtxt --gpus 4 --no-progress -o out.json --trace out.json; echo "[exit $?]"
ls; test "$(md5sum m.onnxtxt)" = "$before" && echo "model unchanged"
