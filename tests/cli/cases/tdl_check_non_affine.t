# An index that multiplies two index variables is not affine: the analysis cannot bound it.
printf '%s\n' 'op Bad(A[N, M]) -> B[i, j] = A[i * j, j]' > $TMP/bad.tdl
$PLANNER tdl check $TMP/bad.tdl
