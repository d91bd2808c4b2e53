#!/usr/bin/env bash
# `explain` and `compile` of a plan without --model, on every shared model (../shared/models and
# its training exports, shrunk as the launcher tests shrink them): the plan records the model's
# path relative to itself (every torch export's graph is named torch_jit, so the name alone
# finds nothing), and the lookup must find it from another working folder too. Then the plan is
# moved away from the model: the recorded path no longer leads to it and the error says where
# it looked. Skipped (77) where the shared models are absent.
#
#   plan_model_lookup_test.sh PLANNER MODELS_DIR SOURCE_DIR
set -uo pipefail
planner=$1 models=$2 src=$3
[ -d "$models" ] || { echo "SKIPPED: $models is absent"; exit 77; }
source "$src/tests/codegen/shrink_maps.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
status=0 count=0
for path in "$models"/*.onnx "$models"/train/*.onnx; do
  [ -f "$path" ] || continue
  m=$(basename "$path" .onnx)
  shrink_map "$m"
  mkdir -p "$work/$m/plans" "$work/$m/elsewhere"
  if ! "$planner" plan "$path" --shrink "$shrink" ${batch:+--batch "$batch"} --gpus 2 \
       --search data-parallel --no-progress -o "$work/$m/plans/plan.json" > "$work/$m/plan.log" 2>&1; then
    echo "FAIL $m: plan: $(tail -1 "$work/$m/plan.log")"; status=1; continue
  fi
  count=$((count + 1))
  recorded=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"].get("path", ""))' \
    "$work/$m/plans/plan.json")
  # From a working folder that holds neither the plan nor the model.
  if ! (cd "$work/$m/elsewhere" && "$planner" explain ../plans/plan.json > ../explain.log 2>&1); then
    echo "FAIL $m: explain without --model: $(tail -1 "$work/$m/explain.log")"; status=1; continue
  fi
  if ! (cd "$work/$m/elsewhere" && "$planner" compile ../plans/plan.json -o ../compiled > ../compile.log 2>&1); then
    echo "FAIL $m: compile without --model: $(tail -1 "$work/$m/compile.log")"; status=1; continue
  fi
  # The plan moved one folder deeper: the recorded path misses, and the error says so.
  mkdir -p "$work/$m/plans/deeper" && mv "$work/$m/plans/plan.json" "$work/$m/plans/deeper/"
  if "$planner" explain "$work/$m/plans/deeper/plan.json" > "$work/$m/missing.log" 2>&1 ||
     ! grep -q "not at $recorded (the path it records)" "$work/$m/missing.log"; then
    echo "FAIL $m: a plan whose recorded path misses: $(tail -1 "$work/$m/missing.log")"; status=1
    continue
  fi
  echo "$m: explain and compile found $recorded"
done
[ $count -gt 0 ] || { echo "SKIPPED: no shared model found in $models"; exit 77; }
exit $status
