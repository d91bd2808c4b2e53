# A syntax error in ONNX's textual syntax shows file:line:column and the line.
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2,4] x) => (float[2,3] y) {\n  y = MatMul(x w)\n}\n' > $TMP/broken.onnxtxt
$PLANNER inspect $TMP/broken.onnxtxt
