# A plan made with --precision fp16 compiles at fp16 (stated again with --precision): the
# manifest records it, activations are f16 buffers, parameters stay f32.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --search data-parallel --precision fp16 --no-progress -o $TMP/plan.json > /dev/null && $PLANNER compile $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt -o $TMP/out --precision fp16 && grep '"precision"' $TMP/out/manifest.json && grep -A1 '"name": "\(h1\|fc1_w\)"' $TMP/out/manifest.json && grep -m2 ' f16' $TMP/out/programs.txt
