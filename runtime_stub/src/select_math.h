// ArgMax/ArgMin and Trilu as the cpu and cuda backends compute them, one output element at a
// time (__host__ __device__ under nvcc; plain types only). tests/runtime/kernels_test.cpp checks
// the cpu kernels, which run these bodies, by hand; the ONNX node tests check them against
// ONNX's own outputs.
#pragma once

#include <stdint.h>

#include "unary_math.h"  // PLANNER_RT_HD

namespace planner::rt::kernels {

/// ArgMax (max) or ArgMin of x viewed as [outer, extent, inner], for output element e (its
/// outer and inner index): the first extreme along the axis, or the last with `last`; a NaN is
/// the extreme (the first NaN, or the last with `last`), as numpy's argmax.
template <typename T>
PLANNER_RT_HD inline int64_t arg_extreme(const T* x, int64_t e, int64_t extent, int64_t inner,
                                         bool max, bool last) {
  const int64_t o = e / inner, i = e % inner;
  const T* p = x + o * extent * inner + i;
  int64_t best = 0;
  for (int64_t k = 1; k < extent; ++k) {
    const T v = p[k * inner], b = p[best * inner];
    const bool v_nan = v != v, b_nan = b != b;
    if (b_nan && !(last && v_nan)) continue;  // a NaN already won (the first one, unless last)
    const bool better = v_nan || (max ? v > b : v < b) || (last && v == b);
    if (better) best = k;
  }
  return best;
}

/// Whether Trilu keeps element (row m, column n) of its last two dimensions: the upper
/// triangle keeps n - m >= k, the lower n - m <= k.
PLANNER_RT_HD inline bool trilu_keeps(int64_t m, int64_t n, int64_t k, bool upper) {
  return upper ? n - m >= k : n - m <= k;
}

}  // namespace planner::rt::kernels
