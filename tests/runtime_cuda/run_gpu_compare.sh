#!/usr/bin/env bash
# Runs gpu_compare (every cuda kernel against the cpu kernel, the collectives over NCCL) from
# the build runtime_cuda_build made. Exits 77 (ctest: skipped), saying why, where nvcc was
# missing (nothing was built) or no GPU is visible (gpu_compare's own 77).
#   run_gpu_compare.sh BUILD_DIR
set -uo pipefail
build=$1
if [ ! -x "$build/gpu_compare" ]; then
  echo "SKIPPED: $build/gpu_compare was not built (no CUDA toolkit, see runtime_cuda_build)"
  exit 77
fi
"$build/gpu_compare" --verbose
rc=$?
[ $rc -eq 77 ] && echo "SKIPPED: no GPU is visible on this machine"
exit $rc
