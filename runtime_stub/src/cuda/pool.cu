// The cuda backend's pooling gradients: PoolGrad one dX element per thread with the body the
// cpu tests check (pool_math.h), GlobalPoolGrad one plane per thread for the maximum.
#include <cstdint>

#include "device_kernels.h"
#include "launch_util.cuh"

namespace planner::rt::cuda {

namespace {

__global__ void pool_grad_kernel(kernels::PoolGeom g, int64_t planes, const float* x,
                                 const float* dy, float* dx) {
  GRID_STRIDE(t, planes * g.in_p) {
    const int64_t pl = t / g.in_p, i = t % g.in_p;
    float v = 0.0f;
    kernels::pool_grad_element(g, x + pl * g.in_p, dy + pl * g.out_p, i, &v);
    dx[t] = v;
  }
}

__global__ void global_average_grad_kernel(const float* dy, float* dx, int64_t planes,
                                           int64_t in_p) {
  GRID_STRIDE(t, planes * in_p) {
    dx[t] = dy[t / in_p] / static_cast<float>(in_p);
  }
}

// dx must be zero-filled: each plane's thread writes its first maximum's gradient.
__global__ void global_max_grad_kernel(const float* x, const float* dy, float* dx, int64_t planes,
                                       int64_t in_p) {
  GRID_STRIDE(pl, planes) {
    const float* xp = x + pl * in_p;
    int64_t best = 0;
    for (int64_t i = 1; i < in_p; ++i)
      if (xp[i] > xp[best]) best = i;
    if (in_p > 0) dx[pl * in_p + best] = dy[pl];
  }
}

}  // namespace

void launch_pool_grad(const kernels::PoolGeom& g, int64_t planes, const float* x, const float* dy,
                      float* dx, cudaStream_t stream) {
  const int64_t n = planes * g.in_p;
  if (n == 0) return;
  pool_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, planes, x, dy, dx);
  check_launch("pool_grad");
}

void launch_global_pool_grad(bool max, const float* x, const float* dy, float* dx, int64_t planes,
                             int64_t in_p, cudaStream_t stream) {
  if (planes * in_p == 0) return;
  if (max)
    global_max_grad_kernel<<<blocks_for(planes), kThreads, 0, stream>>>(x, dy, dx, planes, in_p);
  else
    global_average_grad_kernel<<<blocks_for(planes * in_p), kThreads, 0, stream>>>(dy, dx, planes,
                                                                                   in_p);
  check_launch("global_pool_grad");
}

}  // namespace planner::rt::cuda
