# An index variable that neither the output nor a reduction binds.
printf '%s\n' 'op Bad(A[N, M]) -> B[i] = sum(k: A[i, k] + A[j, k])' > $TMP/bad.tdl
$PLANNER tdl check $TMP/bad.tdl
