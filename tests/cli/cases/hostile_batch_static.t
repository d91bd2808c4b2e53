# --batch on a model whose inputs have no dynamic batch dimension is an error, not ignored.
$PLANNER inspect $EXAMPLES/mlp.onnxtxt --batch 4
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[8, seq] x) => (float[8, seq] y) { y = Relu(x) }\n' > $TMP/seq.onnxtxt
$PLANNER inspect $TMP/seq.onnxtxt --batch 4 --dim seq=3
