// The recurrent cells on the device: one thread per element of rnn_math.h's bodies (the code the
// cpu backend runs in loops); rnn_program.h orders these launches and the cuBLAS products.
#include <cstdint>

#include "device_kernels.h"
#include "launch_util.cuh"

namespace planner::rt::cuda {

namespace {

__global__ void rnn_kernel(kernels::RnnKernel k, kernels::RnnStep p, int64_t n) {
  GRID_STRIDE(e, n) {
    kernels::rnn_element(k, p, e);
  }
}

}  // namespace

void launch_rnn(kernels::RnnKernel k, const kernels::RnnStep& p, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  rnn_kernel<<<blocks_for(n), kThreads, 0, stream>>>(k, p, n);
  check_launch("rnn");
}

}  // namespace planner::rt::cuda
