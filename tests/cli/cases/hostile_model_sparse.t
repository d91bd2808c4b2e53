# A model file past 2 GiB (a sparse file of 3 TiB) is refused by its size before a byte is read: given with --model, recorded as the plan's path, or given to plan.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --search data-parallel --no-progress -o $TMP/p.json > /dev/null
truncate -s 3T $TMP/big.onnx || truncate -s 3G $TMP/big.onnx
size=$(stat -c %s $TMP/big.onnx)
timeout 60 $PLANNER explain $TMP/p.json --model $TMP/big.onnx 2>&1 | sed "s/$size/SIZE/"; echo "[exit ${PIPESTATUS[0]}]"
sed 's|"path": "[^"]*"|"path": "big.onnx"|' $TMP/p.json > $TMP/q.json
timeout 60 $PLANNER explain $TMP/q.json 2>&1 | sed "s/$size/SIZE/"; echo "[exit ${PIPESTATUS[0]}]"
timeout 60 $PLANNER plan $TMP/big.onnx --gpus 2 --no-progress 2>&1 | sed "s/$size/SIZE/"; echo "[exit ${PIPESTATUS[0]}]"
