// The cuda backend's data-movement kernels: strided copies planned on the host (copy_plan.h,
// whose index arithmetic they share), fills, casts, Range, and Gather with its gradient.
#include <cstdint>

#include "device_kernels.h"
#include "launch_util.cuh"

namespace planner::rt::cuda {

namespace {

template <typename T>
__global__ void plan_copy_kernel(kernels::StridedCopy c, int64_t n, const T* x, T* y) {
  GRID_STRIDE(i, n) {
    int64_t xo = 0, yo = 0;
    kernels::copy_offsets(c, i, &xo, &yo);
    y[yo] = x[xo];
  }
}

template <typename T>
__global__ void pad_gather_kernel(kernels::PadGeom g, int64_t n, const T* x, T* y, T fill) {
  GRID_STRIDE(i, n) {
    const int64_t off = kernels::pad_read_offset(g, i);
    y[i] = off < 0 ? fill : x[off];
  }
}

__global__ void pad_grad_kernel(kernels::PadGeom g, int64_t n, const float* dy, float* dx) {
  GRID_STRIDE(i, n) {
    dx[i] = kernels::pad_grad_element(g, dy, i);
  }
}

template <typename T>
__global__ void range_kernel(T* y, int64_t n, T start, T delta) {
  GRID_STRIDE(i, n) {
    y[i] = start + static_cast<T>(i) * delta;  // ONNX: start + i * delta, not a running sum
  }
}

// Integer Range computed in int64 and stored as int32, as the cpu kernel does.
__global__ void range_i32_kernel(int32_t* y, int64_t n, int64_t start, int64_t delta) {
  GRID_STRIDE(i, n) {
    y[i] = static_cast<int32_t>(start + i * delta);
  }
}

template <typename T>
__global__ void fill_kernel(T* y, int64_t n, T value) {
  GRID_STRIDE(i, n) {
    y[i] = value;
  }
}

// Gather rows of `elem`-sized elements; an index out of range sets *error and writes zeros.
template <typename T>
__global__ void gather_kernel(const T* x, const void* indices, bool i64, T* y, int64_t n,
                              int64_t count, int64_t inner, int64_t dim, int* error) {
  GRID_STRIDE(i, n) {
    const int64_t k = kernels::gather_index_of(i, count, inner);
    const int64_t index =
        i64 ? static_cast<const int64_t*>(indices)[k] : static_cast<const int32_t*>(indices)[k];
    const int64_t src = kernels::gather_source(i, count, inner, dim, index);
    if (src < 0) {
      atomicExch(error, 1);
      y[i] = T();
    } else {
      y[i] = x[src];
    }
  }
}

// GatherGrad: one thread per (outer, inner) element adds its dY values in index order, as the
// cpu kernel does, so the sums are bit-identical.
__global__ void gather_grad_kernel(const float* dy, const void* indices, bool i64, float* dx,
                                   int64_t outer, int64_t count, int64_t inner, int64_t dim,
                                   int* error) {
  GRID_STRIDE(t, outer * inner) {
    const int64_t o = t / inner, j = t % inner;
    for (int64_t k = 0; k < count; ++k) {
      int64_t index =
          i64 ? static_cast<const int64_t*>(indices)[k] : static_cast<const int32_t*>(indices)[k];
      if (index < -dim || index >= dim) {
        atomicExch(error, 1);
        continue;
      }
      if (index < 0) index += dim;
      dx[(o * dim + index) * inner + j] += dy[(o * count + k) * inner + j];
    }
  }
}

// Through double, as the cpu kernel converts (integers to floats round once from double).
template <typename From, typename To>
__device__ inline To convert(From v) {
  return static_cast<To>(static_cast<double>(v));
}

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  GRID_STRIDE(i, n) {
    y[i] = convert<From, To>(x[i]);
  }
}

}  // namespace

void launch_copy_plan(const kernels::StridedCopy& c, const void* x, void* y, int elem,
                      cudaStream_t stream) {
  const int64_t n = kernels::copy_count(c);
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  switch (elem) {
    case 1:
      plan_copy_kernel<uint8_t><<<g, kThreads, 0, stream>>>(c, n, static_cast<const uint8_t*>(x),
                                                            static_cast<uint8_t*>(y));
      break;
    case 2:
      plan_copy_kernel<uint16_t><<<g, kThreads, 0, stream>>>(c, n, static_cast<const uint16_t*>(x),
                                                             static_cast<uint16_t*>(y));
      break;
    case 4:
      plan_copy_kernel<uint32_t><<<g, kThreads, 0, stream>>>(c, n, static_cast<const uint32_t*>(x),
                                                             static_cast<uint32_t*>(y));
      break;
    default:
      plan_copy_kernel<uint64_t><<<g, kThreads, 0, stream>>>(c, n, static_cast<const uint64_t*>(x),
                                                             static_cast<uint64_t*>(y));
      break;
  }
  check_launch("plan_copy");
}

void launch_fill(void* y, int64_t n, const void* value, int elem, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  switch (elem) {
    case 1:
      fill_kernel<uint8_t><<<g, kThreads, 0, stream>>>(static_cast<uint8_t*>(y), n,
                                                       *static_cast<const uint8_t*>(value));
      break;
    case 2:
      fill_kernel<uint16_t><<<g, kThreads, 0, stream>>>(static_cast<uint16_t*>(y), n,
                                                        *static_cast<const uint16_t*>(value));
      break;
    case 4:
      fill_kernel<uint32_t><<<g, kThreads, 0, stream>>>(static_cast<uint32_t*>(y), n,
                                                        *static_cast<const uint32_t*>(value));
      break;
    default:
      fill_kernel<uint64_t><<<g, kThreads, 0, stream>>>(static_cast<uint64_t*>(y), n,
                                                        *static_cast<const uint64_t*>(value));
      break;
  }
  check_launch("fill");
}

void launch_gather(const void* x, const void* indices, bool i64, void* y, int64_t outer,
                   int64_t count, int64_t inner, int64_t dim, int elem, int* error,
                   cudaStream_t stream) {
  const int64_t n = outer * count * inner;
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  switch (elem) {
    case 1:
      gather_kernel<uint8_t><<<g, kThreads, 0, stream>>>(static_cast<const uint8_t*>(x), indices,
                                                         i64, static_cast<uint8_t*>(y), n, count,
                                                         inner, dim, error);
      break;
    case 2:
      gather_kernel<uint16_t><<<g, kThreads, 0, stream>>>(static_cast<const uint16_t*>(x), indices,
                                                          i64, static_cast<uint16_t*>(y), n, count,
                                                          inner, dim, error);
      break;
    case 4:
      gather_kernel<uint32_t><<<g, kThreads, 0, stream>>>(static_cast<const uint32_t*>(x), indices,
                                                          i64, static_cast<uint32_t*>(y), n, count,
                                                          inner, dim, error);
      break;
    default:
      gather_kernel<uint64_t><<<g, kThreads, 0, stream>>>(static_cast<const uint64_t*>(x), indices,
                                                          i64, static_cast<uint64_t*>(y), n, count,
                                                          inner, dim, error);
      break;
  }
  check_launch("gather");
}

void launch_gather_grad(const float* dy, const void* indices, bool i64, float* dx, int64_t outer,
                        int64_t count, int64_t inner, int64_t dim, int* error,
                        cudaStream_t stream) {
  // dx arrives zero-filled (the caller's memset).
  if (outer * inner == 0 || count == 0) return;
  gather_grad_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(
      dy, indices, i64, dx, outer, count, inner, dim, error);
  check_launch("gather_grad");
}

bool launch_cast(int from, int to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  // ONNX type codes: 1 f32, 6 i32, 7 i64, 9 bool. Other pairs (16-bit floats, saturating
  // float-to-int) stay with the cpu kernel.
  if (n == 0) return true;
  const unsigned g = blocks_for(n);
#define PLANNER_CAST(F, FT, T, TT)                                                       \
  if (from == F && to == T) {                                                            \
    cast_kernel<FT, TT>                                                                  \
        <<<g, kThreads, 0, stream>>>(static_cast<const FT*>(x), static_cast<TT*>(y), n); \
    check_launch("cast");                                                                \
    return true;                                                                         \
  }
  PLANNER_CAST(7, int64_t, 1, float)
  PLANNER_CAST(6, int32_t, 1, float)
  PLANNER_CAST(6, int32_t, 7, int64_t)
  PLANNER_CAST(9, bool, 1, float)
  PLANNER_CAST(9, bool, 7, int64_t)
  PLANNER_CAST(9, bool, 6, int32_t)
#undef PLANNER_CAST
  return false;
}

void launch_pad_gather(const kernels::PadGeom& g, const void* x, void* y, int64_t n, int elem,
                       uint64_t fill_bits, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned b = blocks_for(n);
  switch (elem) {
    case 1:
      pad_gather_kernel<uint8_t><<<b, kThreads, 0, stream>>>(g, n, static_cast<const uint8_t*>(x),
                                                             static_cast<uint8_t*>(y),
                                                             static_cast<uint8_t>(fill_bits));
      break;
    case 2:
      pad_gather_kernel<uint16_t><<<b, kThreads, 0, stream>>>(g, n, static_cast<const uint16_t*>(x),
                                                              static_cast<uint16_t*>(y),
                                                              static_cast<uint16_t>(fill_bits));
      break;
    case 4:
      pad_gather_kernel<uint32_t><<<b, kThreads, 0, stream>>>(g, n, static_cast<const uint32_t*>(x),
                                                              static_cast<uint32_t*>(y),
                                                              static_cast<uint32_t>(fill_bits));
      break;
    default:
      pad_gather_kernel<uint64_t><<<b, kThreads, 0, stream>>>(g, n, static_cast<const uint64_t*>(x),
                                                              static_cast<uint64_t*>(y), fill_bits);
      break;
  }
  check_launch("pad_gather");
}

void launch_pad_grad(const kernels::PadGeom& g, const float* dy, float* dx, int64_t n,
                     cudaStream_t stream) {
  if (n == 0) return;
  pad_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, n, dy, dx);
  check_launch("pad_grad");
}

void launch_range(int dtype, int64_t start, int64_t delta, float fstart, float fdelta, void* y,
                  int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned b = blocks_for(n);
  if (dtype == 1)
    range_kernel<float><<<b, kThreads, 0, stream>>>(static_cast<float*>(y), n, fstart, fdelta);
  else if (dtype == 6)
    range_i32_kernel<<<b, kThreads, 0, stream>>>(static_cast<int32_t*>(y), n, start, delta);
  else
    range_kernel<int64_t><<<b, kThreads, 0, stream>>>(static_cast<int64_t*>(y), n, start, delta);
  check_launch("range");
}

}  // namespace planner::rt::cuda
