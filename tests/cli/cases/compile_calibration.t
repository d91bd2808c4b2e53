# compile prices the compiled step as plan did when given the same --calibration (here a launch
# overhead of 1 ms): without it the manifest's figure differs from the plan's and compile says
# so, naming both; with it they agree and nothing is said. The calibration file is an input:
# never the output.
printf '{"schema": "planner-calibration/1", "launch_overhead": 1e-3}' > $TMP/slow.json
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --calibration $TMP/slow.json --no-progress -o $TMP/plan.json > /dev/null
$PLANNER compile $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt -o $TMP/a | grep -E "^(note|predicted)"
$PLANNER compile $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt -o $TMP/b --calibration $TMP/slow.json | grep -E "^(note|predicted)"
python3 -c "
import json, sys
plan = json.load(open(sys.argv[1]))['predicted']['step_time_s']
for f in sys.argv[2:]:
    m = json.load(open(f))['predicted']['step_time_s']
    print(f.split('/')[-2], 'agrees with the plan' if abs(m - plan) <= 0.005 * plan else 'differs from the plan')" $TMP/plan.json $TMP/a/manifest.json $TMP/b/manifest.json
$PLANNER compile $TMP/plan.json --model $EXAMPLES/mlp.onnxtxt -o $TMP/slow.json --calibration $TMP/slow.json
