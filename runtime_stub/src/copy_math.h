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

/// Pad in any mode as a gather: the output shape, X's shape and each axis's begin pad
/// (negative: cropping). mode: 0 constant, 1 reflect, 2 edge, 3 wrap (PadMode's order).
struct PadGeom {
  int rank = 0, mode = 0;
  int64_t out[kCopyMaxDims] = {}, in[kCopyMaxDims] = {}, begin[kCopyMaxDims] = {};
};

/// The X index output index o of one axis reads, or -1 for the constant.
PLANNER_RT_HD inline int64_t pad_source(int mode, int64_t o, int64_t begin, int64_t dim) {
  int64_t i = o - begin;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case 2:  // edge
      return i < 0 ? 0 : dim - 1;
    case 3:  // wrap
      return ((i % dim) + dim) % dim;
    case 1: {  // reflect
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      i = ((i % period) + period) % period;
      return i < dim ? i : period - i;
    }
    default:
      return -1;
  }
}

/// The X offset output element o reads, or -1 for the constant.
PLANNER_RT_HD inline int64_t pad_read_offset(const PadGeom& g, int64_t o) {
  int64_t off = 0, stride = 1;
  for (int d = g.rank - 1; d >= 0; --d) {
    const int64_t s = pad_source(g.mode, o % g.out[d], g.begin[d], g.in[d]);
    o /= g.out[d];
    if (s < 0) return -1;
    off += s * stride;
    stride *= g.in[d];
  }
  return off;
}

// The first output index at or after `from` along axis d that reads X index `target`, or -1.
PLANNER_RT_HD inline int64_t pad_next_reader(const PadGeom& g, int d, int64_t target,
                                             int64_t from) {
  for (int64_t o = from; o < g.out[d]; ++o)
    if (pad_source(g.mode, o, g.begin[d], g.in[d]) == target) return o;
  return -1;
}

/// PadGrad at X offset i: the sum of the dY elements that read i, in row-major output order
/// (the order the cpu kernel scatters them in, so the sums are bit-identical).
PLANNER_RT_HD inline float pad_grad_element(const PadGeom& g, const float* dy, int64_t i) {
  int64_t target[kCopyMaxDims], cur[kCopyMaxDims];
  for (int d = g.rank - 1; d >= 0; --d) {
    target[d] = i % g.in[d];
    i /= g.in[d];
  }
  for (int d = 0; d < g.rank; ++d) {
    cur[d] = pad_next_reader(g, d, target[d], 0);
    if (cur[d] < 0) return 0.0f;
  }
  float sum = 0.0f;
  for (;;) {
    int64_t o = 0;
    for (int d = 0; d < g.rank; ++d) o = o * g.out[d] + cur[d];
    sum += dy[o];
    int d = g.rank - 1;
    for (; d >= 0; --d) {
      const int64_t next = pad_next_reader(g, d, target[d], cur[d] + 1);
      if (next >= 0) {
        cur[d] = next;
        break;
      }
      cur[d] = pad_next_reader(g, d, target[d], 0);
    }
    if (d < 0) return sum;
  }
}

}  // namespace planner::rt::kernels
