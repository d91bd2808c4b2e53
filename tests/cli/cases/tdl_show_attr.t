# --attr sets a description's attributes: a 3x3 max pool with stride 2 and padding 1 on an 8x8
# input (the 2-D variant): a row split reads a one-row halo, the window splits with max.
$PLANNER tdl show MaxPool --variant 3 --attr kernel_shape=[3,3] --attr strides=[2,2] --attr pads=[1,1,1,1] --sizes N=2,C=2,L1=8,L2=8
$PLANNER tdl show Gemm --attr transB=1 --attr alpha=0.5 --variant 5 --sizes M=4,K=8,N=6,CN=6 | head -3
$PLANNER tdl show Gemm --attr transB=[x]
