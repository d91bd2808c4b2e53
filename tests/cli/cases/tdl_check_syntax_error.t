# A syntax error: located (file:line:col), the line, a caret; exit code 1.
printf '%s\n' '# an incomplete index' 'op Bad(A[N]) -> B[i] = A[i + ]' > $TMP/bad.tdl
$PLANNER tdl check $TMP/bad.tdl
