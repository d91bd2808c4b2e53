# Unknown operators, unknown sizes and bad --sizes values are one-line errors with exit code 1.
$PLANNER tdl show NoSuchOp; echo "[exit $?]"
$PLANNER tdl show ShiftTwo --sizes Q=3; echo "[exit $?]"
$PLANNER tdl show ShiftTwo --sizes N=zero; echo "[exit $?]"
$PLANNER tdl show MatMul --variant 9
