# A bad --tdl file stops the command with the located error and exit code 1, whichever command
# loads it; a missing one is a one-line error.
printf '%s\n' 'op Mine(A[N]) -> B[i] = A[i] +' > $TMP/bad.tdl
$PLANNER tdl show ShiftTwo --tdl $TMP/bad.tdl; echo "[exit $?]"
$PLANNER tdl list --tdl $TMP/bad.tdl; echo "[exit $?]"
$PLANNER tdl show ShiftTwo --tdl $TMP/none.tdl
