# Bad sizes are one line naming the flag; a file the generator did not write is never replaced;
# its own earlier output is.
$PLANNER generate gpt $TMP/a.onnx --hidden 768 --heads 7; echo "[$?]"
$PLANNER generate gpt $TMP/a.onnx --preset gpt4; echo "[$?]"
$PLANNER generate gpt $TMP/a.onnx --preset gpt2-small --dropout 1; echo "[$?]"
$PLANNER generate gpt; echo "[$?]"
cp examples/mlp.onnxtxt $TMP/mine.onnx
$PLANNER generate gpt $TMP/mine.onnx --preset gpt2-small; echo "[$?]"
cmp -s examples/mlp.onnxtxt $TMP/mine.onnx && echo "mine.onnx untouched"
$PLANNER generate gpt $TMP/g.onnx --layers 1 --hidden 32 --heads 2 --seq 8 --vocab 16 >/dev/null &&
$PLANNER generate gpt $TMP/g.onnx --layers 2 --hidden 32 --heads 2 --seq 8 --vocab 16
