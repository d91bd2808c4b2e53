# --min-gpus tries every step: where the plain step fits on no GPU count, the plan with
# recomputation that fits on the fewest GPUs is taken, and the note says why.
$PLANNER generate gpt $TMP/small.onnx --layers 4 --hidden 256 --heads 8 --seq 128 --vocab 1000 > /dev/null &&
$PLANNER plan $TMP/small.onnx --batch 64 --gpus 8 --optimizer adam --search frontier --min-gpus --memory-limit 150MiB --no-progress -o $TMP/p.json | grep note &&
grep -E '"(recompute|gpus_used)": ' $TMP/p.json | grep -v phase; grep -c '"phase": "recompute"' $TMP/p.json
