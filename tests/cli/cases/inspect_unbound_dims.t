# Dynamic dimensions must be bound; the error lists the names and the flags to use.
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[batch, seq, 16] x) => (float[batch, seq, 16] y) { y = Relu(x) }\n' > $TMP/dynamic.onnxtxt
$PLANNER inspect $TMP/dynamic.onnxtxt
$PLANNER inspect $TMP/dynamic.onnxtxt --batch 4
