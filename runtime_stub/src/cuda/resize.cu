// Resize and its input gradient on the device: one element per thread, resize_math.h's body (the
// cpu kernel runs the same).
#include <cstdint>

#include "../resize_math.h"
#include "device_kernels.h"
#include "launch_util.cuh"

namespace planner::rt::cuda {

namespace {

__global__ void resize_kernel(const float* x, float* y, kernels::ResizeParams p) {
  GRID_STRIDE(e, p.numel_out) {
    y[e] = kernels::resize_at<float>(x, p, e);
  }
}

__global__ void resize_grad_kernel(const float* dy, float* dx, int64_t n, kernels::ResizeParams p) {
  GRID_STRIDE(i, n) {
    dx[i] = kernels::resize_grad_at<float>(dy, p, i);
  }
}

}  // namespace

void launch_resize(const float* x, float* y, const kernels::ResizeParams& p, cudaStream_t stream) {
  if (p.numel_out == 0) return;
  resize_kernel<<<blocks_for(p.numel_out), kThreads, 0, stream>>>(x, y, p);
  check_launch("resize");
}

void launch_resize_grad(const float* dy, float* dx, int64_t n, const kernels::ResizeParams& p,
                        cudaStream_t stream) {
  if (n == 0) return;
  resize_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dy, dx, n, p);
  check_launch("resize_grad");
}

}  // namespace planner::rt::cuda
