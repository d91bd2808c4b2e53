# A training export with its loss inside: SoftmaxCrossEntropyLoss over 10 classes at every
# position, one class ignored. It is imported as LogSoftmax + NegativeLogLikelihoodLoss,
# differentiated through NLLLossGrad, and the partitioned steps verify against the whole one.
cat > $TMP/lm.onnxtxt <<'MODEL'
<ir_version: 8, opset_import: ["" : 17]>
lm (float[8,16,32] x, int64[8,16] labels) => (float loss) <float[32,10] w = {}> {
  h = MatMul(x, w)
  t = Transpose<perm = [0, 2, 1]>(h)
  loss = SoftmaxCrossEntropyLoss<reduction = "mean", ignore_index = 3>(t, labels)
}
MODEL
$PLANNER inspect $TMP/lm.onnxtxt --dump-graph | grep -E "LogSoftmax|NegativeLogLikelihoodLoss" | sed 's/  #.*//'
$PLANNER verify $TMP/lm.onnxtxt --gpus 4 --search dp | grep -v 'step:'
$PLANNER verify $TMP/lm.onnxtxt --gpus 2 --search data-parallel | grep -v 'step:'
