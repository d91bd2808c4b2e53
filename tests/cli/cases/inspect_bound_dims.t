# --batch and --dim bind dynamic dimensions; the shapes are then static.
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[batch, seq, 16] x) => (float[batch, seq, 16] y) { y = Relu(x) }\n' > $TMP/dynamic.onnxtxt
$PLANNER inspect $TMP/dynamic.onnxtxt --batch 4 --dim seq=32
