#!/usr/bin/env bash
# `planner compile --backend cuda` for the four example models (a plan of each from
# `planner plan`, training, 4 GPUs): their launchers configure and build against runtime_stub's
# cuda backend in one wrapper project (the runtime built once), with -DPLANNER_RT_MPI=ON where
# MPI is found (mpicxx), so the one launcher source is checked against the World of every mode.
# Skipped (exit 77), saying why, where nvcc is missing.
set -euo pipefail
planner=$1 source_dir=$2
if ! command -v nvcc > /dev/null; then echo "SKIPPED: nvcc not found"; exit 77; fi
if grep -q 'only the cpu backend exists' "$source_dir/runtime_stub/CMakeLists.txt"; then
  echo "SKIPPED: runtime_stub has no cuda backend yet"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
models=(mlp transformer_block small_cnn lstm)
{
  echo "cmake_minimum_required(VERSION 3.20)"
  echo "project(cuda_launchers LANGUAGES CXX)"
  echo "set(PLANNER_RT_BACKEND cuda CACHE STRING \"\")"
  echo "add_subdirectory(\${CMAKE_CURRENT_SOURCE_DIR}/mlp/runtime_stub \${CMAKE_CURRENT_BINARY_DIR}/runtime_stub)"
} > "$tmp/CMakeLists.txt"
for m in "${models[@]}"; do
  "$planner" plan "$source_dir/examples/$m.onnxtxt" --gpus 4 --search dp --no-progress -o "$tmp/$m.json" > /dev/null
  "$planner" compile "$tmp/$m.json" --model "$source_dir/examples/$m.onnxtxt" -o "$tmp/$m" --backend cuda > /dev/null
  echo "set(PLANNER_LAUNCHER_TARGET launcher_$m)" >> "$tmp/CMakeLists.txt"
  echo "add_subdirectory(\${CMAKE_CURRENT_SOURCE_DIR}/$m/launcher \${CMAKE_CURRENT_BINARY_DIR}/$m)" >> "$tmp/CMakeLists.txt"
done
# A mixed-precision program too (format-2 program table, bf16 buffers).
"$planner" plan "$source_dir/examples/small_cnn.onnxtxt" --gpus 4 --search dp --precision bf16 --no-progress \
  -o "$tmp/small_cnn_bf16.json" > /dev/null
"$planner" compile "$tmp/small_cnn_bf16.json" --model "$source_dir/examples/small_cnn.onnxtxt" -o "$tmp/small_cnn_bf16" \
  --backend cuda --precision bf16 > /dev/null
echo "set(PLANNER_LAUNCHER_TARGET launcher_small_cnn_bf16)" >> "$tmp/CMakeLists.txt"
echo "add_subdirectory(\${CMAKE_CURRENT_SOURCE_DIR}/small_cnn_bf16/launcher \${CMAKE_CURRENT_BINARY_DIR}/small_cnn_bf16)" >> "$tmp/CMakeLists.txt"
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR=$tmp  # paths hashed relative to the temporary folder: later runs hit
mpi=() with=""
if command -v mpicxx > /dev/null; then mpi=(-DPLANNER_RT_MPI=ON) with=" with MPI"; fi
cmake -S "$tmp" -B "$tmp/build" -G Ninja "${launcher[@]}" "${mpi[@]}" > "$tmp/log" 2>&1 && cmake --build "$tmp/build" >> "$tmp/log" 2>&1 \
  || { tail -40 "$tmp/log"; exit 1; }
if [ -n "$with" ] && ! grep -q 'PLANNER_RT_MPI=1' "$tmp/build/build.ninja"; then
  echo "mpicxx is installed but the runtime was built without MPI:"; grep -i mpi "$tmp/log" | tail -5; exit 1
fi
echo "built the cuda launchers of ${models[*]} and small_cnn (bf16)$with"
