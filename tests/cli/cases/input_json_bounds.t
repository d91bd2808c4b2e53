# JSON inputs with 65,536 nested levels (a SIGSEGV before: the error message rendered the value), a number out of range, or wrong types: one located line each, exit 1, never a crash or "internal".
{ printf '{"name": '; head -c 65536 /dev/zero | tr '\0' '['; head -c 65536 /dev/zero | tr '\0' ']'; printf '}'; } > $TMP/deep.json
printf '{"schema": "planner-costs/1", "kernels": [{"op_type": "Gemm", "seconds": 1e400, "input_shapes": []}]}' > $TMP/huge.json
printf '{"schema": "planner-costs/1", "kernels": [{"op_type": "Gemm", "domain": 7, "seconds": 1, "input_shapes": []}]}' > $TMP/domain.json
printf '{"schema": "planner-costs/1", "kernels": [{"op_type": "Gemm", "seconds": 1, "input_shapes": [[9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 9223372036854775807, 0]]}]}' > $TMP/nan.json
sed '0,/"memory_bandwidth": [0-9.e+]*/s//"memory_bandwidth": 1e400/' examples/topologies/a100-pcie-2node.json > $TMP/topo.json
$PLANNER diff $TMP/deep.json tests/cli/data/plans/mlp_dp.json; echo "[exit $?]"
$PLANNER topology check $TMP/deep.json; echo "[exit $?]"
$PLANNER topology check $TMP/topo.json; echo "[exit $?]"
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --costs $TMP/deep.json; echo "[exit $?]"
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --costs $TMP/huge.json; echo "[exit $?]"
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --costs $TMP/domain.json; echo "[exit $?]"
$PLANNER simulate $EXAMPLES/mlp.onnxtxt --gpus 2 --costs $TMP/nan.json; echo "[exit $?]"
sed 's/"step_time_s": [0-9.e-]*/"step_time_s": 1e400/' tests/cli/data/plans/mlp_dp.json > $TMP/plan.json
$PLANNER diff $TMP/plan.json tests/cli/data/plans/mlp_dp.json; echo "[exit $?]"
