# A user's description (--tdl) of a custom-domain operator, and one overriding a built-in.
printf '%s\n' '# a batched product in a custom domain' \
  'op com.example.BatchDot(A[G, M, K], B[G, K, N]) -> C[g, m, n] = sum(k: A[g, m, k] * B[g, k, n])' \
  'op Relu(X[N]) -> Y[i : N] = opaque(X[:])' > $TMP/user.tdl
$PLANNER tdl show com.example.BatchDot --tdl $TMP/user.tdl --sizes G=2,M=4,K=6,N=2 --format json
$PLANNER tdl show Relu --tdl $TMP/user.tdl --sizes N=10
$PLANNER tdl list --tdl $TMP/user.tdl | grep -E 'BatchDot|^Relu'
