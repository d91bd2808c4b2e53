// ArgMax, ArgMin and Trilu on the device: one output element per thread, select_math.h's
// bodies (the cpu kernels run the same).
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

}  // namespace planner::rt::cuda
