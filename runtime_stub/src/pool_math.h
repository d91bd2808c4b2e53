// PoolGrad as the cuda backend computes it, one dX element at a time (__host__ __device__ under
// nvcc; plain types only). The cpu kernel scatters each window's gradient; here each element
// gathers from the windows that contain it, in the same row-major window order, so the sums
// are bit-identical (tests/runtime/pool_math_test.cpp runs these bodies against the cpu kernel).
#pragma once

#include <stdint.h>

#include "unary_math.h"  // PLANNER_RT_HD

namespace planner::rt::kernels {

inline constexpr int kPoolMaxDims = 3;
/// Most windows along one axis that can contain an input position (kernel extent bound).
inline constexpr int kPoolMaxCandidates = 32;

/// One plane's pooling window geometry (Window's fields as fixed arrays).
struct PoolGeom {
  int nd = 0;
  int64_t in[kPoolMaxDims] = {}, kernel[kPoolMaxDims] = {}, strides[kPoolMaxDims] = {};
  int64_t dilations[kPoolMaxDims] = {}, pad_begin[kPoolMaxDims] = {}, pad_end[kPoolMaxDims] = {};
  int64_t out[kPoolMaxDims] = {};
  int64_t in_p = 1, out_p = 1, kernel_n = 1;  ///< elements per plane, windows, kernel positions
  bool max = false;                           ///< MaxPool (else AveragePool)
  bool include_pad = false;                   ///< AveragePool's count_include_pad
};

/// The plane offset kernel position ki of window p reads, or -1 in the padding (Window::offsets).
PLANNER_RT_HD inline int64_t pool_offset(const PoolGeom& g, int64_t p, int64_t ki) {
  int64_t off = 0, stride = 1;
  for (int d = g.nd - 1; d >= 0; --d) {
    const int64_t o = p % g.out[d], k = ki % g.kernel[d];
    p /= g.out[d];
    ki /= g.kernel[d];
    const int64_t pos = o * g.strides[d] - g.pad_begin[d] + k * g.dilations[d];
    if (pos < 0 || pos >= g.in[d]) return -1;
    off += pos * stride;
    stride *= g.in[d];
  }
  return off;
}

/// The offset of window p's maximum (the first, NaN winning), or -1 for an all-padding window.
PLANNER_RT_HD inline int64_t pool_argmax(const PoolGeom& g, const float* x, int64_t p) {
  int64_t best = -1;
  for (int64_t ki = 0; ki < g.kernel_n; ++ki) {
    const int64_t off = pool_offset(g, p, ki);
    if (off < 0) continue;
    const float v = x[off];
    if (best < 0 || v > x[best] || (v != v && !(x[best] != x[best]))) best = off;
  }
  return best;
}

/// AveragePool's divisor of window p (average_divisors in pool.cpp).
PLANNER_RT_HD inline float pool_divisor(const PoolGeom& g, int64_t p) {
  if (!g.include_pad) {
    int64_t c = 0;
    for (int64_t ki = 0; ki < g.kernel_n; ++ki) c += pool_offset(g, p, ki) >= 0 ? 1 : 0;
    return static_cast<float>(c > 1 ? c : 1);
  }
  int64_t c = 1;
  for (int d = g.nd - 1; d >= 0; --d) {
    const int64_t o = p % g.out[d];
    p /= g.out[d];
    int64_t n = 0;
    for (int64_t k = 0; k < g.kernel[d]; ++k) {
      const int64_t pos = o * g.strides[d] - g.pad_begin[d] + k * g.dilations[d];
      n += pos >= -g.pad_begin[d] && pos < g.in[d] + g.pad_end[d] ? 1 : 0;
    }
    c *= n;
  }
  return static_cast<float>(c);
}

/// dX at plane offset i: the sum, in row-major window order, of the gradients of the windows
/// that read i (MaxPool: whose maximum is i). False where the geometry has more candidate
/// windows along an axis than kPoolMaxCandidates (the caller runs the cpu kernel instead).
PLANNER_RT_HD inline bool pool_grad_element(const PoolGeom& g, const float* x, const float* dy,
                                            int64_t i, float* result) {
  // Per axis, the windows containing the position, ascending.
  int64_t cand[kPoolMaxDims][kPoolMaxCandidates];
  int n[kPoolMaxDims] = {};
  int64_t rest = i;
  for (int d = g.nd - 1; d >= 0; --d) {
    const int64_t pos = rest % g.in[d];
    rest /= g.in[d];
    for (int64_t k = g.kernel[d] - 1; k >= 0; --k) {
      const int64_t t = pos + g.pad_begin[d] - k * g.dilations[d];
      if (t < 0 || t % g.strides[d] != 0) continue;
      const int64_t o = t / g.strides[d];
      if (o >= g.out[d]) continue;
      if (n[d] == kPoolMaxCandidates) return false;
      cand[d][n[d]++] = o;
    }
  }
  float sum = 0.0f;
  for (int d = 0; d < g.nd; ++d)
    if (n[d] == 0) {
      *result = sum;
      return true;
    }
  int at[kPoolMaxDims] = {};
  while (true) {
    int64_t p = 0;
    for (int d = 0; d < g.nd; ++d) p = p * g.out[d] + cand[d][at[d]];
    if (g.max) {
      if (pool_argmax(g, x, p) == i) sum += dy[p];
    } else {
      sum += dy[p] / pool_divisor(g, p);
    }
    int d = g.nd - 1;
    while (d >= 0 && ++at[d] == n[d]) at[d--] = 0;
    if (d < 0) break;
  }
  *result = sum;
  return true;
}

}  // namespace planner::rt::kernels
