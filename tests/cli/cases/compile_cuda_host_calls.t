# The cuda backend's host rules, counted at compile time (planner_rt/cuda_host_calls.h): a
# pooling with ceil_mode, an integer Add and a float-to-integer Cast run on the host, each
# counted per rank with its reason in the manifest and summed in compile's note; the cpu
# backend and a model without such calls report none.
cat > $TMP/hc.onnxtxt <<'MODEL'
<ir_version: 8, opset_import: ["" : 17]>
hc (float[8,4,16,16] x, int64[8,16] i, int64[8,16] j) => (float[8,4,8,8] y, int64[8,16] k, int64[8,4,16,16] m) {
  y = MaxPool<kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1>(x)
  k = Add(i, j)
  m = Cast<to = 7>(x)
}
MODEL
$PLANNER plan $TMP/hc.onnxtxt --mode infer --gpus 2 --search data-parallel --no-progress -o $TMP/p.json > /dev/null &&
$PLANNER compile $TMP/p.json --backend cuda -o $TMP/cuda | grep -v "^predicted" &&
python3 -c "
import json, sys
for r in json.load(open(sys.argv[1]))['ranks']: print('rank', r['rank'], r['host_fallback_kernels'], r.get('host_fallback_reasons'))" $TMP/cuda/manifest.json &&
$PLANNER compile $TMP/p.json --backend cpu -o $TMP/cpu | grep -c "run on the host"
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --search data-parallel --no-progress -o $TMP/q.json > /dev/null &&
$PLANNER compile $TMP/q.json --backend cuda -o $TMP/mlp | grep -c "run on the host"
python3 -c "
import json, sys
print(sum(r['host_fallback_kernels'] for r in json.load(open(sys.argv[1]))['ranks']))" $TMP/mlp/manifest.json
