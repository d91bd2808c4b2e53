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
# torch.gather (GatherElements) in a training graph: its gradient adds each value back where it
# was taken (ai.planner.GatherElementsGrad), on 4 ranks under the dp search.
cat > $TMP/ge.onnxtxt <<'MODEL'
<ir_version: 8, opset_import: ["" : 17]>
ge (float[8,16,32] x) => (float[8,4,10] y) <float[32,10] w = {}> {
  idx = Constant<value = int64[1,4,1] {3, 0, 15, 3}>()
  shape = Constant<value = int64[3] {8, 4, 10}>()
  full = Expand(idx, shape)
  h = MatMul(x, w)
  y = GatherElements<axis = 1>(h, full)
}
MODEL
$PLANNER verify $TMP/ge.onnxtxt --gpus 4 --search dp | grep -v 'step:'
