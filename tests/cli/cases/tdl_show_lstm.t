# The fused LSTM (bidirectional: D = 2) splits along the batch n, the hidden units h and the
# direction d. A hidden split reads every gate's rows of its units (exact in the weights' view
# [D, 4, H, I]) and reads back the whole previous hidden state each step (the state line).
$PLANNER tdl show LSTM --sizes S=4,N=2,I=3,D=2,H=2
