# explain prices the plan as plan did when given the same --calibration (here a launch overhead
# of 1 ms, which the operators' own times then show); a bad file is one error naming it.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 -o $TMP/plan.json > /dev/null
printf '{"schema": "planner-calibration/1", "launch_overhead": 1e-3}' > $TMP/slow.json
$PLANNER explain $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt --top 2
$PLANNER explain $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt --top 2 --calibration $TMP/slow.json
$PLANNER explain $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt --costs $TMP/missing.json
