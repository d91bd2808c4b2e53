# --precision on compile must agree with the precision the plan records (fp32 here): one line, exit 1.
$PLANNER compile tests/cli/data/plans/mlp_dp.json --model $EXAMPLES/mlp.onnxtxt -o $TMP/out --precision bf16 || { echo "exit $?"; ls $TMP; false; }
