#!/usr/bin/env bash
# `planner compile --backend cuda`: the launcher configures and builds where nvcc is found and
# runtime_stub has a cuda backend; otherwise the test is skipped (exit 77) and says why.
set -euo pipefail
planner=$1 source_dir=$2
if ! command -v nvcc > /dev/null; then echo "SKIPPED: nvcc not found"; exit 77; fi
if grep -q 'only the cpu backend exists' "$source_dir/runtime_stub/CMakeLists.txt"; then
  echo "SKIPPED: runtime_stub has no cuda backend yet"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# verify --keep leaves the compiled folders (a 2-rank data-parallel plan) in $tmp/keep.
"$planner" verify "$source_dir/examples/mlp.onnxtxt" --gpus 2 --mode infer --keep "$tmp/keep"
cmake -S "$tmp/keep/partitioned0/launcher" -B "$tmp/build" -G Ninja -DPLANNER_RT_BACKEND=cuda > "$tmp/log" 2>&1 && cmake --build "$tmp/build" >> "$tmp/log" 2>&1 \
  || { tail -40 "$tmp/log"; exit 1; }
echo "built the cuda launcher"
