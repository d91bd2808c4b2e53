// ArgMax, ArgMin, Trilu, TopK, CumSum and OneHot on the device: one output element (TopK and
// CumSum: one slice) per thread, select_math.h's bodies (the cpu kernels run the same).
#include <cstdint>

#include "../select_math.h"
#include "device_kernels.h"
#include "launch_util.cuh"

namespace planner::rt::cuda {

namespace {

template <typename T>
__global__ void arg_kernel(const T* x, int64_t* y, int64_t n, int64_t extent, int64_t inner,
                           bool max, bool last) {
  GRID_STRIDE(e, n) {
    y[e] = kernels::arg_extreme<T>(x, e, extent, inner, max, last);
  }
}

template <typename T>
__global__ void trilu_kernel(const T* x, T* y, int64_t n, int64_t rows, int64_t cols, int64_t k,
                             bool upper) {
  GRID_STRIDE(i, n) {
    y[i] = kernels::trilu_keeps((i / cols) % rows, i % cols, k, upper) ? x[i] : T();
  }
}

template <typename T>
__global__ void topk_kernel(const T* x, T* values, int64_t* indices, int64_t n, int64_t extent,
                            int64_t inner, int64_t k, bool largest) {
  GRID_STRIDE(e, n) {
    kernels::top_k<T>(x, e, extent, inner, k, largest, values, indices);
  }
}

__global__ void topk_grad_kernel(const float* dv, const int64_t* indices, float* dx, int64_t n,
                                 int64_t extent, int64_t inner, int64_t k) {
  GRID_STRIDE(e, n) {
    kernels::top_k_grad<float>(dv, indices, dx, e, extent, inner, k);
  }
}

template <typename T, typename A>
__global__ void cumsum_kernel(const T* x, T* y, int64_t n, int64_t extent, int64_t inner,
                              bool exclusive, bool reverse) {
  GRID_STRIDE(e, n) {
    kernels::cum_sum<T, A>(x, y, e, extent, inner, exclusive, reverse);
  }
}

template <typename I, typename T>
__global__ void one_hot_kernel(const I* indices, const T* values, T* y, int64_t n, int64_t depth,
                               int64_t inner) {
  GRID_STRIDE(e, n) {
    const int64_t o = e / (depth * inner), d = (e / inner) % depth, i = e % inner;
    y[e] = values[kernels::one_hot_on(static_cast<int64_t>(indices[o * inner + i]), d, depth)];
  }
}

template <typename I>
void one_hot_typed(const I* indices, const void* values, void* y, int64_t n, int64_t depth,
                   int64_t inner, int elem, cudaStream_t stream) {
  const unsigned g = blocks_for(n);
  switch (elem) {
    case 1:
      one_hot_kernel<I, uint8_t><<<g, kThreads, 0, stream>>>(
          indices, static_cast<const uint8_t*>(values), static_cast<uint8_t*>(y), n, depth, inner);
      break;
    case 2:
      one_hot_kernel<I, uint16_t>
          <<<g, kThreads, 0, stream>>>(indices, static_cast<const uint16_t*>(values),
                                       static_cast<uint16_t*>(y), n, depth, inner);
      break;
    case 4:
      one_hot_kernel<I, uint32_t>
          <<<g, kThreads, 0, stream>>>(indices, static_cast<const uint32_t*>(values),
                                       static_cast<uint32_t*>(y), n, depth, inner);
      break;
    default:
      one_hot_kernel<I, uint64_t>
          <<<g, kThreads, 0, stream>>>(indices, static_cast<const uint64_t*>(values),
                                       static_cast<uint64_t*>(y), n, depth, inner);
      break;
  }
}

}  // namespace

void launch_arg_extreme(int dtype, const void* x, int64_t* y, int64_t n, int64_t extent,
                        int64_t inner, bool max, bool last, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  if (dtype == 1)
    arg_kernel<float>
        <<<g, kThreads, 0, stream>>>(static_cast<const float*>(x), y, n, extent, inner, max, last);
  else if (dtype == 6)
    arg_kernel<int32_t><<<g, kThreads, 0, stream>>>(static_cast<const int32_t*>(x), y, n, extent,
                                                    inner, max, last);
  else
    arg_kernel<int64_t><<<g, kThreads, 0, stream>>>(static_cast<const int64_t*>(x), y, n, extent,
                                                    inner, max, last);
  check_launch("arg_extreme");
}

void launch_trilu(const void* x, void* y, int64_t n, int64_t rows, int64_t cols, int64_t k,
                  bool upper, int elem, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  switch (elem) {
    case 1:
      trilu_kernel<uint8_t><<<g, kThreads, 0, stream>>>(
          static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), n, rows, cols, k, upper);
      break;
    case 2:
      trilu_kernel<uint16_t><<<g, kThreads, 0, stream>>>(
          static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), n, rows, cols, k, upper);
      break;
    case 4:
      trilu_kernel<uint32_t><<<g, kThreads, 0, stream>>>(
          static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), n, rows, cols, k, upper);
      break;
    default:
      trilu_kernel<uint64_t><<<g, kThreads, 0, stream>>>(
          static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y), n, rows, cols, k, upper);
      break;
  }
  check_launch("trilu");
}

void launch_topk(int dtype, const void* x, void* values, int64_t* indices, int64_t n,
                 int64_t extent, int64_t inner, int64_t k, bool largest, cudaStream_t stream) {
  if (n == 0 || k == 0) return;
  const unsigned g = blocks_for(n);
  if (dtype == 1)
    topk_kernel<float><<<g, kThreads, 0, stream>>>(static_cast<const float*>(x),
                                                   static_cast<float*>(values), indices, n, extent,
                                                   inner, k, largest);
  else if (dtype == 6)
    topk_kernel<int32_t><<<g, kThreads, 0, stream>>>(static_cast<const int32_t*>(x),
                                                     static_cast<int32_t*>(values), indices, n,
                                                     extent, inner, k, largest);
  else
    topk_kernel<int64_t><<<g, kThreads, 0, stream>>>(static_cast<const int64_t*>(x),
                                                     static_cast<int64_t*>(values), indices, n,
                                                     extent, inner, k, largest);
  check_launch("topk");
}

void launch_topk_grad(const float* dv, const int64_t* indices, float* dx, int64_t n, int64_t extent,
                      int64_t inner, int64_t k, cudaStream_t stream) {
  if (n == 0) return;
  topk_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dv, indices, dx, n, extent, inner, k);
  check_launch("topk_grad");
}

void launch_cumsum(int dtype, const void* x, void* y, int64_t n, int64_t extent, int64_t inner,
                   bool exclusive, bool reverse, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  if (dtype == 1)
    cumsum_kernel<float, double><<<g, kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<float*>(y), n, extent, inner, exclusive, reverse);
  else if (dtype == 6)
    cumsum_kernel<int32_t, int64_t><<<g, kThreads, 0, stream>>>(static_cast<const int32_t*>(x),
                                                                static_cast<int32_t*>(y), n, extent,
                                                                inner, exclusive, reverse);
  else
    cumsum_kernel<int64_t, int64_t><<<g, kThreads, 0, stream>>>(static_cast<const int64_t*>(x),
                                                                static_cast<int64_t*>(y), n, extent,
                                                                inner, exclusive, reverse);
  check_launch("cumsum");
}

void launch_one_hot(int index_dtype, const void* indices, const void* values, void* y, int64_t n,
                    int64_t depth, int64_t inner, int elem, cudaStream_t stream) {
  if (n == 0) return;
  if (index_dtype == 1)
    one_hot_typed(static_cast<const float*>(indices), values, y, n, depth, inner, elem, stream);
  else if (index_dtype == 6)
    one_hot_typed(static_cast<const int32_t*>(indices), values, y, n, depth, inner, elem, stream);
  else
    one_hot_typed(static_cast<const int64_t*>(indices), values, y, n, depth, inner, elem, stream);
  check_launch("one_hot");
}

}  // namespace planner::rt::cuda
