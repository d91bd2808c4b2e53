// Resize (opset 11-17) in nearest, linear and cubic modes as the cpu and cuda backends compute
// it, one output element at a time (__host__ __device__ under nvcc; plain types only).
//
// Each output coordinate maps to a coordinate of the input along its axis
// (coordinate_transformation_mode); the value is a sum over taps: along each axis two input
// positions (nearest, linear) or four (cubic), weighted, out-of-range positions read at the
// edge. This is the ONNX reference's rule (onnx/reference/ops/op_resize.py, which made the
// backend tests' expected outputs): the fraction of a coordinate lies in (0, 1], so a whole
// coordinate x is the right tap of the pair (x - 1, x) with weight 1. Weights multiply across
// axes and the sum is taken in double. tests/runtime/resize_test.cpp checks values worked out
// by hand; the ONNX node tests check the kernels against ONNX's outputs.
#pragma once

#include <math.h>
#include <stdint.h>

#include "unary_math.h"  // PLANNER_RT_HD

namespace planner::rt::kernels {

inline constexpr int kResizeMaxRank = 8;

enum ResizeMode : int32_t { kResizeNearest = 0, kResizeLinear = 1, kResizeCubic = 2 };
enum ResizeCoord : int32_t {
  kCoordHalfPixel = 0,
  kCoordPytorchHalfPixel = 1,
  kCoordAlignCorners = 2,
  kCoordAsymmetric = 3,
  kCoordTfHalfPixelForNn = 4,
};
enum ResizeRounding : int32_t {
  kRoundPreferFloor = 0,
  kRoundPreferCeil = 1,
  kRoundFloor = 2,
  kRoundCeil = 3,
};

/// One Resize: its input and output extents and each axis's scale (the `scales` input, or
/// output / input extent when `sizes` is given).
struct ResizeParams {
  int32_t rank = 0;
  int32_t mode = kResizeNearest;
  int32_t coord = kCoordHalfPixel;
  int32_t rounding = kRoundPreferFloor;
  int32_t exclude_outside = 0;
  double cubic_a = -0.75;
  int64_t in[kResizeMaxRank] = {};
  int64_t out[kResizeMaxRank] = {};
  double scale[kResizeMaxRank] = {};
  int64_t numel_out = 0;
};

/// The input coordinate output index x maps to along axis d.
PLANNER_RT_HD inline double resize_source(const ResizeParams& p, int d, int64_t x) {
  const double s = p.scale[d];
  const double xr = static_cast<double>(x);
  const double out_extent = s * static_cast<double>(p.in[d]);
  switch (p.coord) {
    case kCoordAlignCorners:
      return out_extent == 1 ? 0.0 : xr * static_cast<double>(p.in[d] - 1) / (out_extent - 1);
    case kCoordAsymmetric:
      return xr / s;
    case kCoordPytorchHalfPixel:
      return out_extent == 1 ? -0.5 : (xr + 0.5) / s - 0.5;
    case kCoordTfHalfPixelForNn:
      return (xr + 0.5) / s;
    default:
      return (xr + 0.5) / s - 0.5;
  }
}

/// The taps along axis d for output index x: input positions (clamped to the axis) and their
/// weights, zero weights left out; returns how many (1 to 4).
PLANNER_RT_HD inline int resize_taps(const ResizeParams& p, int d, int64_t x, int64_t* idx,
                                     double* w) {
  const double xo = resize_source(p, d, x);
  const double fl = floor(xo);
  const bool whole = xo == fl;
  const double r = whole ? 1.0 : xo - fl;  // in (0, 1]: a whole coordinate is a right tap
  const int64_t left = static_cast<int64_t>(fl) - (whole ? 1 : 0);
  int64_t at[4];
  double wt[4];
  int n = 2;
  if (p.mode == kResizeCubic) {
    n = 4;
    const double a = p.cubic_a, r1 = r + 1, q = 1 - r, q1 = q + 1;
    wt[0] = ((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a;
    wt[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    wt[2] = ((a + 2) * q - (a + 3)) * q * q + 1;
    wt[3] = ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a;
    for (int k = 0; k < 4; ++k) at[k] = left - 1 + k;
  } else {
    at[0] = left;
    at[1] = left + 1;
    if (p.mode == kResizeLinear) {
      wt[0] = 1 - r;
      wt[1] = r;
    } else {
      bool right = true;
      if (!whole) {
        if (p.rounding == kRoundPreferCeil)
          right = r >= 0.5;
        else if (p.rounding == kRoundFloor)
          right = false;
        else if (p.rounding == kRoundCeil)
          right = true;
        else
          right = r > 0.5;
      }
      wt[0] = right ? 0.0 : 1.0;
      wt[1] = right ? 1.0 : 0.0;
    }
  }
  const int64_t extent = p.in[d];
  if (p.exclude_outside) {
    double sum = 0;
    for (int k = 0; k < n; ++k) {
      if (at[k] < 0 || at[k] >= extent) wt[k] = 0;
      sum += wt[k];
    }
    for (int k = 0; k < n; ++k) wt[k] = sum != 0 ? wt[k] / sum : wt[k];
  }
  int kept = 0;
  for (int k = 0; k < n; ++k) {
    if (wt[k] == 0) continue;
    idx[kept] = at[k] < 0 ? 0 : (at[k] >= extent ? extent - 1 : at[k]);
    w[kept] = wt[k];
    ++kept;
  }
  if (kept == 0) {  // every weight zero (exclude_outside far outside): the nearest edge, weight 0
    idx[0] = at[0] < 0 ? 0 : (at[0] >= extent ? extent - 1 : at[0]);
    w[0] = 0;
    kept = 1;
  }
  return kept;
}

/// Output element e of Resize of x (row-major, p.in's extents).
template <typename T>
PLANNER_RT_HD inline T resize_at(const T* x, const ResizeParams& p, int64_t e) {
  int64_t idx[kResizeMaxRank][4];
  double w[kResizeMaxRank][4];
  int n[kResizeMaxRank];
  int k[kResizeMaxRank];
  int64_t rest = e;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t c = rest % p.out[d];
    rest /= p.out[d];
    n[d] = resize_taps(p, d, c, idx[d], w[d]);
    k[d] = 0;
  }
  double sum = 0;
  for (;;) {
    double weight = 1;
    int64_t offset = 0;
    for (int d = 0; d < p.rank; ++d) {
      weight *= w[d][k[d]];
      offset = offset * p.in[d] + idx[d][k[d]];
    }
    sum += weight * static_cast<double>(x[offset]);
    int d = p.rank - 1;
    while (d >= 0 && ++k[d] == n[d]) k[d--] = 0;
    if (d < 0) break;
  }
  return static_cast<T>(sum);
}

/// The weight of input index j along axis d in output index x's taps (0 where j is not one).
PLANNER_RT_HD inline double resize_weight(const ResizeParams& p, int d, int64_t x, int64_t j) {
  int64_t idx[4];
  double w[4];
  const int n = resize_taps(p, d, x, idx, w);
  double sum = 0;
  for (int k = 0; k < n; ++k)
    if (idx[k] == j) sum += w[k];
  return sum;
}

/// The output indices along axis d whose taps hold input index j: [*lo, *hi), the ends trimmed
/// to nonzero weights. A tap lies within two places of its source coordinate (clamped taps at
/// the edges), and the source coordinate grows with the output index: two binary searches.
PLANNER_RT_HD inline int64_t resize_first_source_at_least(const ResizeParams& p, int d, double v) {
  int64_t a = 0, b = p.out[d];
  while (a < b) {
    const int64_t m = a + (b - a) / 2;
    if (resize_source(p, d, m) >= v)
      b = m;
    else
      a = m + 1;
  }
  return a;
}

PLANNER_RT_HD inline void resize_grad_range(const ResizeParams& p, int d, int64_t j, int64_t* lo,
                                            int64_t* hi) {
  const int64_t last = p.in[d] - 1;
  int64_t a = j == 0 ? 0 : resize_first_source_at_least(p, d, static_cast<double>(j) - 2);
  int64_t b = j == last ? p.out[d] : resize_first_source_at_least(p, d, static_cast<double>(j) + 3);
  while (a < b && resize_weight(p, d, a, j) == 0) ++a;
  while (b > a && resize_weight(p, d, b - 1, j) == 0) --b;
  *lo = a;
  *hi = b;
}

/// Element i of Resize's input gradient (p: the forward Resize; dy row-major in p.out's
/// extents): the sum of every output gradient weighted as the forward pass weighted input i,
/// in row-major order of the outputs, in double. One element at a time, so the cpu and the
/// device give the same bits.
template <typename T>
PLANNER_RT_HD inline T resize_grad_at(const T* dy, const ResizeParams& p, int64_t i) {
  int64_t j[kResizeMaxRank], lo[kResizeMaxRank], hi[kResizeMaxRank], x[kResizeMaxRank];
  double w[kResizeMaxRank];  // w[d]: the product of the weights of axes 0..d
  int64_t rest = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    j[d] = rest % p.in[d];
    rest /= p.in[d];
  }
  for (int d = 0; d < p.rank; ++d) {
    resize_grad_range(p, d, j[d], &lo[d], &hi[d]);
    if (lo[d] == hi[d]) return static_cast<T>(0);
    x[d] = lo[d];
  }
  int from = 0;  // axes from here on need their weights again
  double sum = 0;
  for (;;) {
    for (int d = from; d < p.rank; ++d)
      w[d] = (d == 0 ? 1.0 : w[d - 1]) * resize_weight(p, d, x[d], j[d]);
    if (w[p.rank - 1] != 0) {
      int64_t offset = 0;
      for (int d = 0; d < p.rank; ++d) offset = offset * p.out[d] + x[d];
      sum += w[p.rank - 1] * static_cast<double>(dy[offset]);
    }
    int d = p.rank - 1;
    while (d >= 0 && ++x[d] == hi[d]) {
      x[d] = lo[d];
      --d;
    }
    if (d < 0) break;
    from = d;
  }
  return static_cast<T>(sum);
}

}  // namespace planner::rt::kernels
