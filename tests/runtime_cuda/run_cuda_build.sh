#!/usr/bin/env bash
# Configures and builds runtime_stub with the cuda backend and runs registry_probe (no GPU
# needed). Exits 77 (ctest: skipped) without nvcc. The GPU comparison is its own test
# (runtime_cuda_gpu_compare), skipped where no GPU is visible.
#   run_cuda_build.sh PROJECT_DIR BUILD_DIR RUNTIME_STUB_DIR
set -euo pipefail
project=$1 build=$2 runtime=$3
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "runtime_cuda_build: skipped: nvcc not found (no CUDA toolkit on this machine)"
  exit 77
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
mpi=OFF
command -v mpicxx >/dev/null && mpi=ON
cmake -S "$project" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DRUNTIME_STUB_DIR="$runtime" -DPLANNER_RT_MPI=$mpi >"$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" --parallel 2
"$build/registry_probe"
