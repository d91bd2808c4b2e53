// The index arithmetic of the data-movement kernels, shared by the cpu backend and the cuda
// kernels (__host__ __device__ under nvcc): plain types only, so .cu files can include it.
#pragma once

#include <stdint.h>

#include "unary_math.h"  // PLANNER_RT_HD

namespace planner::rt::kernels {

inline constexpr int kCopyMaxDims = 8;

/// One strided copy between operand `input` and result `output` of a kernel.
struct StridedCopy {
  int rank = 0;
  int64_t shape[kCopyMaxDims] = {};
  int64_t x_strides[kCopyMaxDims] = {};
  int64_t y_strides[kCopyMaxDims] = {};
  int64_t x_offset = 0, y_offset = 0;  ///< in elements
  int input = 0, output = 0;
};

/// The elements a copy moves.
PLANNER_RT_HD inline int64_t copy_count(const StridedCopy& c) {
  int64_t n = 1;
  for (int d = 0; d < c.rank; ++d) n *= c.shape[d];
  return n;
}

/// Where element i (row-major over the box) is read from (*x) and written to (*y).
PLANNER_RT_HD inline void copy_offsets(const StridedCopy& c, int64_t i, int64_t* x, int64_t* y) {
  int64_t xo = c.x_offset, yo = c.y_offset;
  for (int d = c.rank - 1; d >= 0; --d) {
    const int64_t idx = i % c.shape[d];
    i /= c.shape[d];
    xo += idx * c.x_strides[d];
    yo += idx * c.y_strides[d];
  }
  *x = xo;
  *y = yo;
}

/// Gather over data [outer, dim, inner] with `count` indices: the data offset output element i
/// reads, given the index it uses (`index`, already read), or -1 when the index is outside
/// [-dim, dim).
PLANNER_RT_HD inline int64_t gather_source(int64_t i, int64_t count, int64_t inner, int64_t dim,
                                           int64_t index) {
  if (index < -dim || index >= dim) return -1;
  if (index < 0) index += dim;
  const int64_t j = i % inner;
  const int64_t o = i / inner / count;
  return (o * dim + index) * inner + j;
}

/// Which index output element i of Gather uses (its position in the flattened indices).
PLANNER_RT_HD inline int64_t gather_index_of(int64_t i, int64_t count, int64_t inner) {
  return (i / inner) % count;
}

}  // namespace planner::rt::kernels
