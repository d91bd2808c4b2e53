# TDL nesting is bounded: 40k nested '[' in an attribute default and a 40k-term chain are
# located errors (a window of the long line, a caret), not a stack overflow.
{ printf 'op F<a = '; head -c 40000 /dev/zero | tr '\0' '['; printf '1'; head -c 40000 /dev/zero | tr '\0' ']'; printf '>(A[N]) -> B[i] = A[i]\n'; } > $TMP/lists.tdl
$PLANNER tdl check $TMP/lists.tdl
{ printf 'op F(A[N]) -> B[i] = A[i]'; for i in $(seq 40000); do printf ' + A[i]'; done; printf '\n'; } > $TMP/chain.tdl
$PLANNER tdl check $TMP/chain.tdl
