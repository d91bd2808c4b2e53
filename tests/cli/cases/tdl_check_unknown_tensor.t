# A body reading a tensor the operator does not declare.
printf '%s\n' 'op Good(A[N]) -> B[i] = A[i]' 'op Bad(A[N]) -> B[i] = C[i]' > $TMP/bad.tdl
$PLANNER tdl check $TMP/bad.tdl
