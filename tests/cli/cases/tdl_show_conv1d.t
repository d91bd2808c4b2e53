# Tofu's conv1d (Figure 3) on concrete sizes: b, co and x split the output (x with a halo of
# DX - 1 = 2 input columns), ci and dx split the reduction.
$PLANNER tdl show Conv1d --sizes B=8,CI=4,X=32,CO=16,DX=3
