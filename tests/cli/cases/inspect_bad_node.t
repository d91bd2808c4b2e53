# Shape inference failing on one node names the node.
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2,4] x, float[5,3] w) => (float[2,3] y) { t = MatMul(x, w)\n y = Relu(t) }\n' > $TMP/mismatch.onnxtxt
$PLANNER inspect $TMP/mismatch.onnxtxt
