# An exporter-style Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain folds into one
# constant shape vector; only the Reshape is left.
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2,3,4] x) => (float[2,12] y) <int64[1] axes0 = {0}> {\n  s = Shape(x)\n  i0 = Constant<value_int = 0>()\n  d0 = Gather(s, i0)\n  u = Unsqueeze(d0, axes0)\n  m1 = Constant<value_ints = [-1]>()\n  target = Concat<axis = 0>(u, m1)\n  y = Reshape(x, target)\n}\n' > $TMP/chain.onnxtxt
$PLANNER inspect $TMP/chain.onnxtxt --dump-graph
