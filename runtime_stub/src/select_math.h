// ArgMax/ArgMin, Trilu, TopK, CumSum and OneHot as the cpu and cuda backends compute them, one
// output element at a time (__host__ __device__ under nvcc; plain types only).
// tests/runtime/kernels_test.cpp checks the cpu kernels, which run these bodies, by hand; the ONNX
// node tests check them against ONNX's own outputs.
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

/// Whether element (a, index ia) comes before (b, ib) in TopK's output: larger values first
/// (smaller with !largest), NaN the largest value (as PyTorch's topk), ties to the lower index.
template <typename T>
PLANNER_RT_HD inline bool topk_before(T a, int64_t ia, T b, int64_t ib, bool largest) {
  const bool a_nan = a != a, b_nan = b != b;
  const bool a_gt = a_nan ? !b_nan : (!b_nan && a > b);
  const bool b_gt = b_nan ? !a_nan : (!a_nan && b > a);
  if (largest ? a_gt : b_gt) return true;
  if (largest ? b_gt : a_gt) return false;
  return ia < ib;
}

/// TopK of x viewed as [outer, extent, inner], for slice e (its outer and inner index): the k
/// first elements in topk_before's order, written sorted to values and indices viewed as
/// [outer, k, inner]. Each pick is the first element after the previous pick (the order is
/// strict), so no scratch memory is needed: O(k * extent) per slice.
template <typename T>
PLANNER_RT_HD inline void top_k(const T* x, int64_t e, int64_t extent, int64_t inner, int64_t k,
                                bool largest, T* values, int64_t* indices) {
  const int64_t o = e / inner, i = e % inner;
  const T* p = x + o * extent * inner + i;
  int64_t prev = -1;
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t m = 0; m < extent; ++m) {
      if (prev >= 0 && !topk_before(p[prev * inner], prev, p[m * inner], m, largest)) continue;
      if (best < 0 || topk_before(p[m * inner], m, p[best * inner], best, largest)) best = m;
    }
    const int64_t at = (o * k + j) * inner + i;
    values[at] = p[best * inner];
    indices[at] = best;
    prev = best;
  }
}

/// TopKGrad for slice e of dX viewed as [outer, extent, inner]: zero, then each of the slice's
/// k value gradients (dV, indices viewed as [outer, k, inner]) added where its value was taken
/// (the k positions of a slice are distinct, so a slice per thread writes without races).
template <typename T>
PLANNER_RT_HD inline void top_k_grad(const T* dv, const int64_t* indices, T* dx, int64_t e,
                                     int64_t extent, int64_t inner, int64_t k) {
  const int64_t o = e / inner, i = e % inner;
  T* p = dx + o * extent * inner + i;
  for (int64_t m = 0; m < extent; ++m) p[m * inner] = T(0);
  for (int64_t j = 0; j < k; ++j) {
    const int64_t at = (o * k + j) * inner + i;
    const int64_t m = indices[at];
    if (m >= 0 && m < extent) p[m * inner] += dv[at];
  }
}

/// CumSum of x viewed as [outer, extent, inner], for slice e: the running sums along the axis
/// (exclusive: without the element itself; reverse: from the end), accumulated in A.
template <typename T, typename A>
PLANNER_RT_HD inline void cum_sum(const T* x, T* y, int64_t e, int64_t extent, int64_t inner,
                                  bool exclusive, bool reverse) {
  const int64_t o = e / inner, i = e % inner;
  const int64_t base = o * extent * inner + i;
  A acc = A(0);
  for (int64_t step = 0; step < extent; ++step) {
    const int64_t k = reverse ? extent - 1 - step : step;
    const A v = static_cast<A>(x[base + k * inner]);
    if (!exclusive) acc += v;
    y[base + k * inner] = static_cast<T>(acc);
    if (exclusive) acc += v;
  }
}

/// OneHot's element (outer o, depth position d, inner i) given the index read at (o, i): on
/// where the index (negative ones counted from the end) equals d.
PLANNER_RT_HD inline bool one_hot_on(int64_t index, int64_t d, int64_t depth) {
  if (index < 0) index += depth;
  return index == d;
}

}  // namespace planner::rt::kernels
