// GatherElements, NegativeLogLikelihoodLoss and NLLLossGrad on the device: loss_math.h's
// bodies (the cpu kernels run the same). Element-wise forms run a thread per element; the
// reduced loss, and a mean's gradient divisor, are one thread's loop in element order (over the
// targets: tokens, not the vocabulary), so the sums are the cpu's bit for bit.
#include <cstdint>

#include "../loss_math.h"
#include "device_kernels.h"
#include "launch_util.cuh"

namespace planner::rt::cuda {

namespace {

template <typename T>
__global__ void gather_elements_kernel(const T* x, const void* indices, bool i64, T* y, int64_t n,
                                       kernels::SmallShape idx, kernels::SmallShape data, int axis,
                                       int* error) {
  GRID_STRIDE(e, n) {
    const int64_t index =
        i64 ? static_cast<const int64_t*>(indices)[e] : static_cast<const int32_t*>(indices)[e];
    const int64_t src = kernels::gather_elements_source(e, idx, data, axis, index);
    if (src < 0) {
      atomicExch(error, 1);
      y[e] = T();
    } else {
      y[e] = x[src];
    }
  }
}

__global__ void gather_elements_grad_kernel(const float* dy, const int64_t* idx, float* dx,
                                            int64_t lines, kernels::SmallShape ind,
                                            kernels::SmallShape data, int axis, int* error) {
  GRID_STRIDE(line, lines) {
    if (!kernels::gather_elements_grad_line(dy, idx, dx, line, ind, data, axis))
      atomicExch(error, 1);
  }
}

__global__ void nll_none_kernel(const float* x, const int64_t* target, const float* w, float* y,
                                int64_t count, int64_t c, int64_t inner, bool ignore,
                                int64_t ignored, int* error) {
  GRID_STRIDE(k, count) {
    double loss = 0, weight = 0;
    if (!kernels::nll_term(x, w, target[k], k / inner, k % inner, c, inner, ignore, ignored, &loss,
                           &weight))
      atomicExch(error, 1);
    y[k] = static_cast<float>(loss);
  }
}

__global__ void nll_reduced_kernel(const float* x, const int64_t* target, const float* w, float* y,
                                   int64_t n, int64_t c, int64_t inner, bool ignore,
                                   int64_t ignored, bool mean, int* error) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int bad = 0;
  y[0] = kernels::nll_reduced(x, target, w, n, c, inner, ignore, ignored, mean, &bad);
  if (bad) atomicExch(error, 1);
}

// One thread: a mean's divisor, then every counted target's gradient (dx zeroed before).
__global__ void nll_grad_mean_kernel(const float* dy, const int64_t* target, const float* w,
                                     float* dx, int64_t count, int64_t c, int64_t inner,
                                     bool ignore, int64_t ignored, int* error) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const double share = dy[0] / kernels::nll_weights(target, w, count, c, ignore, ignored);
  for (int64_t k = 0; k < count; ++k)
    if (!kernels::nll_grad_term(target, w, dx, k, c, inner, ignore, ignored, share))
      atomicExch(error, 1);
}

__global__ void nll_grad_kernel(const float* dy, const int64_t* target, const float* w, float* dx,
                                int64_t count, int64_t c, int64_t inner, bool ignore,
                                int64_t ignored, bool none, int* error) {
  GRID_STRIDE(k, count) {
    if (!kernels::nll_grad_term(target, w, dx, k, c, inner, ignore, ignored, none ? dy[k] : dy[0]))
      atomicExch(error, 1);
  }
}

}  // namespace

void launch_gather_elements(const void* x, const void* indices, bool i64, void* y, int64_t n,
                            const kernels::SmallShape& idx, const kernels::SmallShape& data,
                            int axis, int elem, int* error, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  switch (elem) {
    case 1:
      gather_elements_kernel<uint8_t>
          <<<g, kThreads, 0, stream>>>(static_cast<const uint8_t*>(x), indices, i64,
                                       static_cast<uint8_t*>(y), n, idx, data, axis, error);
      break;
    case 2:
      gather_elements_kernel<uint16_t>
          <<<g, kThreads, 0, stream>>>(static_cast<const uint16_t*>(x), indices, i64,
                                       static_cast<uint16_t*>(y), n, idx, data, axis, error);
      break;
    case 4:
      gather_elements_kernel<uint32_t>
          <<<g, kThreads, 0, stream>>>(static_cast<const uint32_t*>(x), indices, i64,
                                       static_cast<uint32_t*>(y), n, idx, data, axis, error);
      break;
    default:
      gather_elements_kernel<uint64_t>
          <<<g, kThreads, 0, stream>>>(static_cast<const uint64_t*>(x), indices, i64,
                                       static_cast<uint64_t*>(y), n, idx, data, axis, error);
      break;
  }
  check_launch("gather_elements");
}

void launch_gather_elements_grad(const float* dy, const int64_t* idx, float* dx, int64_t lines,
                                 const kernels::SmallShape& ind, const kernels::SmallShape& data,
                                 int axis, int* error, cudaStream_t stream) {
  if (lines == 0) return;
  gather_elements_grad_kernel<<<blocks_for(lines), kThreads, 0, stream>>>(dy, idx, dx, lines, ind,
                                                                          data, axis, error);
  check_launch("gather_elements_grad");
}

void launch_nll_loss(const float* x, const int64_t* target, const float* w, float* y, int64_t n,
                     int64_t c, int64_t inner, bool ignore, int64_t ignored, bool none, bool mean,
                     int* error, cudaStream_t stream) {
  const int64_t count = n * inner;
  if (none) {
    if (count == 0) return;
    nll_none_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, target, w, y, count, c, inner,
                                                                ignore, ignored, error);
  } else {
    nll_reduced_kernel<<<1, 1, 0, stream>>>(x, target, w, y, n, c, inner, ignore, ignored, mean,
                                            error);
  }
  check_launch("nll_loss");
}

void launch_nll_loss_grad(const float* dy, const int64_t* target, const float* w, float* dx,
                          int64_t n, int64_t c, int64_t inner, bool ignore, int64_t ignored,
                          bool none, bool mean, int* error, cudaStream_t stream) {
  const int64_t count = n * inner;
  if (count == 0) return;
  if (mean)
    nll_grad_mean_kernel<<<1, 1, 0, stream>>>(dy, target, w, dx, count, c, inner, ignore, ignored,
                                              error);
  else
    nll_grad_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dy, target, w, dx, count, c, inner,
                                                                ignore, ignored, none, error);
  check_launch("nll_loss_grad");
}

}  // namespace planner::rt::cuda
