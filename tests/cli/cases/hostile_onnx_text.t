# ONNX text that ONNX's parser mishandles is refused first: 30k nested If subgraphs (a stack
# overflow in the parser) and a NUL byte (the parser would silently stop there).
{ printf '<ir_version: 8, opset_import: ["" : 17]>\ng (bool c, float[2] x) => (float[2] y) {\n'; for i in $(seq 30000); do printf 'y = If(c) <then_branch = t () => (float[2] y) {\n'; done; } > $TMP/nested.onnxtxt
$PLANNER inspect $TMP/nested.onnxtxt
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) {\n y = Relu(x)\n}\n\0 garbage after a NUL\n' > $TMP/nul.onnxtxt
$PLANNER inspect $TMP/nul.onnxtxt
