# Attributes that crashed ONNX 1.12's shape inference are checked first: zero strides (SIGFPE),
# a weight whose rank disagrees with the input (SIGSEGV), pads of the wrong length, a group
# that does not divide the channels. One line naming the node each.
h='<ir_version: 8, opset_import: ["" : 17]>'
printf '%s\ng (float[1,3,8,8] x) => (y) <float[4,3,3,3] w = {}> { y = Conv<strides = [0, 0]>(x, w) }\n' "$h" > $TMP/conv.onnxtxt
$PLANNER inspect $TMP/conv.onnxtxt
printf '%s\ng (float[1,3,8,8] x) => (y) { y = MaxPool<kernel_shape = [2, 2], strides = [0, 1]>(x) }\n' "$h" > $TMP/maxpool.onnxtxt
$PLANNER inspect $TMP/maxpool.onnxtxt
printf '%s\ng (float[1,3,8,8] x) => (y) { y = AveragePool<kernel_shape = [2, 0]>(x) }\n' "$h" > $TMP/avgpool.onnxtxt
$PLANNER inspect $TMP/avgpool.onnxtxt
printf '%s\ng (float[1,3,8,8] x) => (y) <float[4,3,3] w = {}> { y = Conv(x, w) }\n' "$h" > $TMP/rank.onnxtxt
$PLANNER inspect $TMP/rank.onnxtxt
printf '%s\ng (float[1,3,8,8] x) => (y) <float[4,3,3,3] w = {}> { y = Conv<pads = [1, 1, 1]>(x, w) }\n' "$h" > $TMP/pads.onnxtxt
$PLANNER inspect $TMP/pads.onnxtxt
printf '%s\ng (float[1,6,8,8] x) => (y) <float[4,3,3,3] w = {}> { y = Conv<group = 4>(x, w) }\n' "$h" > $TMP/group.onnxtxt
$PLANNER inspect $TMP/group.onnxtxt
printf '%s\ng (float[1,3,8,8] x) => (y) <float[4,3,3,3] w = {}> { y = Conv<pads = [4611686018427387904, 0, 4611686018427387904, 0]>(x, w) }\n' "$h" > $TMP/huge_pads.onnxtxt
$PLANNER inspect $TMP/huge_pads.onnxtxt
