#!/usr/bin/env bash
# The planner beside PaSE (Elango, IPDPS 2021; github.com/baidu-research/PaSE) on PaSE's five
# workloads, in the same run on this machine (issue 17): PaSE's scheduler.py on its own graphs
# (graph.py) and `planner plan` on the same networks rebuilt as ONNX
# (scripts/export_pase_models.py), at the paper's batch sizes, at each GPU count. Prints CPU
# seconds (user + system) and peak RSS of both, and the ratio of CPU times.
#   bench/scale/pase_compare.sh PASE_CHECKOUT [build/planner] [work folder] [GPU counts...]
# PASE_CHECKOUT: a checkout of PaSE's repository (scheduler.py at its top). Its Python
# dependencies go into a virtual environment under the work folder: pandas 1.5 (PaSE calls
# DataFrame.drop positionally, which pandas 2 refuses), numpy < 2, networkx < 3, from PyPI.
set -euo pipefail
pase=${1:?usage: pase_compare.sh PASE_CHECKOUT [planner] [work] [gpus...]}
planner=${2:-build/planner}
work=${3:-$(mktemp -d)}
shift $(($# < 3 ? $# : 3))
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(4 16 64)
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work/models"
if [ ! -x "$work/venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$work/venv"
  "$work/venv/bin/pip" install -q "pandas==1.5.3" "numpy<2" "networkx<3"
fi
# PaSE's graph names and batch sizes; the ONNX exports' names.
specs=("alexnet alexnet 128" "resnet101 resnet101 128" "inception3 inception_v3 128"
       "rnnlm rnnlm 64" "transformer transformer 64")
cpu() { awk '{ printf "%.2f", $1 + $2 }' "$1"; }
rss() { awk '{ printf "%.2f", $3 / 1048576 }' "$1"; }
printf '%-12s %5s %14s %10s %14s %10s %8s\n' workload GPUs "PaSE CPU s" "PaSE GB" "planner CPU s" \
  "planner GB" ratio
for spec in "${specs[@]}"; do
  read -r graph model batch <<<"$spec"
  [ -f "$work/models/pase_$model.onnx" ] ||
    /usr/bin/python3 "$here/scripts/export_pase_models.py" "$work/models" "pase_$model" >/dev/null
  for p in "${counts[@]}"; do
    (cd "$pase" && /usr/bin/time -f "%U %S %M" -o "$work/pase.time" \
      "$work/venv/bin/python" scheduler.py -p "$p" -b "$batch" -g "$graph" >"$work/pase.log" 2>&1) ||
      { echo "$graph $p: PaSE failed: $(tail -1 "$work/pase.log")"; continue; }
    /usr/bin/time -f "%U %S %M" -o "$work/planner.time" "$planner" plan \
      "$work/models/pase_$model.onnx" --gpus "$p" --no-progress -o "$work/plan.json" \
      >"$work/planner.log" 2>&1 || { echo "$model $p: planner failed: $(tail -1 "$work/planner.log")"; continue; }
    a=$(cpu "$work/pase.time") b=$(cpu "$work/planner.time")
    printf '%-12s %5s %14s %10s %14s %10s %7.1fx\n' "$model" "$p" "$a" "$(rss "$work/pase.time")" \
      "$b" "$(rss "$work/planner.time")" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
  done
done
