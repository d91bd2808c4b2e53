# Sourced by the bench/scale scripts with their arguments, `. plan_timed.sh "$@"`:
# [PLANNER [WORK]] set `planner` (default build/planner) and `work` (a folder made for the run
# unless given). Then `plan_timed NAME MODEL ARGS...` plans $work/MODEL.onnx
# with $planner in bf16 with Adam, writing $work/NAME.{json,log}, and sets `secs` (wall
# seconds), `gb` (peak RSS, GB), `step` and `mem` (the plan's predicted step and peak, empty
# where it wrote none) and `log` (the log's path).
plan_timed() {
  local name=$1 model=$2
  shift 2
  log="$work/$name.log"
  /usr/bin/time -f "%e %M" -o "$work/$name.time" "$planner" plan "$work/$model.onnx" \
    --precision bf16 --optimizer adam --no-progress -o "$work/$name.json" "$@" >"$log" 2>&1 ||
    true
  local kb
  read -r secs kb <"$work/$name.time"
  gb=$(awk -v k="$kb" 'BEGIN { print k / 1048576 }')
  step=$(grep -m1 '^step time' "$log" | awk '{print $3, $4}' || true)
  mem=$(grep -m1 '^peak memory' "$log" | awk '{print $3, $4}' || true)
}

planner=${1:-build/planner}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
