# Resize in linear and cubic modes (by scales and by sizes) splits along the batch and channels
# natively; a Resize that also scales the batch runs whole where its rows are split. The
# partitioned steps verify against the whole one on 4 ranks.
cat > $TMP/rz.onnxtxt <<'MODEL'
<ir_version: 8, opset_import: ["" : 13]>
rz (float[8,6,5,7] x) => (float[8,6,10,10] y, float[16,6,5,7] z) {
  roi = Constant<value = float[0] {}>()
  s = Constant<value = float[4] {1.0, 1.0, 2.0, 1.5}>()
  sz = Constant<value = int64[4] {8, 6, 10, 10}>()
  a = Resize<mode = "linear">(x, roi, s)
  y = Resize<mode = "cubic", coordinate_transformation_mode = "align_corners">(a, roi, , sz)
  s2 = Constant<value = float[4] {2.0, 1.0, 1.0, 1.0}>()
  z = Resize<mode = "linear", coordinate_transformation_mode = "asymmetric">(x, roi, s2)
}
MODEL
$PLANNER plan $TMP/rz.onnxtxt --mode infer --gpus 4 --search data-parallel --no-progress -o $TMP/p.json > /dev/null &&
$PLANNER explain $TMP/p.json | grep Resize | awk '{print $1, $4}' &&
$PLANNER compile $TMP/p.json -o $TMP/out | grep -o "([0-9]* of whole operators)" &&
$PLANNER verify $TMP/rz.onnxtxt --mode infer --gpus 4 --search mcmc --seed 3 | grep -v 'step:' &&
$PLANNER verify $TMP/rz.onnxtxt --mode infer --gpus 4 --search dp | grep -v 'step:'
# Training through a bilinear upsampling: its gradient (ai.planner.ResizeGrad) splits as Resize
# does, and the partitioned training steps verify.
cat > $TMP/rzt.onnxtxt <<'MODEL'
<ir_version: 8, opset_import: ["" : 13]>
rzt (float[8,6,5,7] x) => (float[8,6,10,14] y) <float[6,6,1,1] w = {}> {
  roi = Constant<value = float[0] {}>()
  s = Constant<value = float[4] {1.0, 1.0, 2.0, 2.0}>()
  c = Conv(x, w)
  y = Resize<mode = "linear">(c, roi, s)
}
MODEL
$PLANNER verify $TMP/rzt.onnxtxt --gpus 4 --search data-parallel | grep -v 'step:' &&
$PLANNER verify $TMP/rzt.onnxtxt --gpus 4 --search mcmc --seed 2 | grep -v 'step:'
