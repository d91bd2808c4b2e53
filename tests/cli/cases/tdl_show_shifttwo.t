# Tofu's shift_two (section 4.2): B[i] = A[i + 2] with N = 12 splits i into [0, 4] and [5, 9],
# which read A[2, 6] and A[7, 11].
$PLANNER tdl show ShiftTwo --sizes N=12
