# A good file: every definition analysed alone, or said why it needs a node.
printf '%s\n' '# Tofu examples, and a reshape that needs a node to expand' \
  'op Conv1d(data[B, CI, X], filters[CI, CO, DX]) -> out[b, co, x] =' \
  '    sum(ci, dx: data[b, ci, x + dx] * filters[ci, co, dx])' \
  'op ShiftTwo(A[N]) -> B[i] = A[i + 2]' \
  'op Scale<alpha = 2.0>(X[N, M]) -> Y[i, j] = alpha * X[i, j]' \
  'op Flat(X[...]) -> Y[..o] = reshape(X)' > $TMP/ok.tdl
$PLANNER tdl check $TMP/ok.tdl
$PLANNER tdl check $TMP/missing.tdl
