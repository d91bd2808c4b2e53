# A plan of 65,536 micro-batches (the most --micro-batches takes) compiles to one error line, not an unrolled step of gigabytes; a modest count compiles.
$PLANNER generate gpt $TMP/tiny.onnx --layers 1 --hidden 32 --heads 2 --seq 8 --vocab 64 >/dev/null
$PLANNER plan $TMP/tiny.onnx --batch 65536 --micro-batches 65536 --gpus 4 --search data-parallel --no-progress -o $TMP/p.json > /dev/null; echo "[exit $?]"
timeout 120 $PLANNER compile $TMP/p.json -o $TMP/out; echo "[exit $?]"
test ! -e $TMP/out && echo "no output folder"
$PLANNER plan $TMP/tiny.onnx --batch 64 --micro-batches 64 --gpus 4 --search data-parallel --no-progress -o $TMP/q.json > /dev/null; echo "[exit $?]"
$PLANNER compile $TMP/q.json -o $TMP/out2 > /dev/null; echo "[exit $?]"
