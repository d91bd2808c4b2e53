// GatherElements and NegativeLogLikelihoodLoss as the cpu and cuda backends compute them, one
// element (or, for the reductions, one loop in element order) at a time (__host__ __device__
// under nvcc; plain types only). tests/runtime/loss_test.cpp checks the cpu kernels, which run
// these bodies, by hand; the ONNX node tests check them against ONNX's own outputs.
#pragma once

#include <stdint.h>

#include "unary_math.h"  // PLANNER_RT_HD

namespace planner::rt::kernels {

/// A shape of at most 8 dimensions, passed to device kernels by value.
struct SmallShape {
  int64_t d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int rank = 0;
};

/// GatherElements: the data element output element e reads (e indexes the indices' shape
/// `idx`; `data` is the data's shape), given the index read at e; -1 when the index lies
/// outside [-extent, extent) of the data's `axis`.
PLANNER_RT_HD inline int64_t gather_elements_source(int64_t e, const SmallShape& idx,
                                                    const SmallShape& data, int axis,
                                                    int64_t index) {
  const int64_t extent = data.d[axis];
  if (index < -extent || index >= extent) return -1;
  if (index < 0) index += extent;
  int64_t off = 0, stride = 1, rest = e;
  for (int k = idx.rank - 1; k >= 0; --k) {
    const int64_t at = rest % idx.d[k];
    rest /= idx.d[k];
    off += (k == axis ? index : at) * stride;
    stride *= data.d[k];
  }
  return off;
}

/// GatherElementsGrad for one line of dData along `axis` (line = every coordinate but the
/// axis one, as an index into the indices' shape with that coordinate 0): zero the line, then
/// add each dY value of the matching indices line where it was gathered, in index order (the
/// cpu and each device thread add in the same order). Returns false for an index out of range.
PLANNER_RT_HD inline bool gather_elements_grad_line(const float* dy, const int64_t* idx, float* dx,
                                                    int64_t line, const SmallShape& ind,
                                                    const SmallShape& data, int axis) {
  // The line's coordinates in the indices' shape (axis coordinate 0).
  int64_t coord[8];
  int64_t rest = line;
  for (int k = ind.rank - 1; k >= 0; --k) {
    const int64_t extent = k == axis ? 1 : ind.d[k];
    coord[k] = rest % extent;
    rest /= extent;
  }
  int64_t base = 0, stride = 1, axis_stride = 1, ibase = 0, istride = 1, iaxis_stride = 1;
  for (int k = ind.rank - 1; k >= 0; --k) {
    if (k == axis) {
      axis_stride = stride;
      iaxis_stride = istride;
    } else {
      base += coord[k] * stride;
      ibase += coord[k] * istride;
    }
    stride *= data.d[k];
    istride *= ind.d[k];
  }
  const int64_t extent = data.d[axis];
  for (int64_t v = 0; v < extent; ++v) dx[base + v * axis_stride] = 0.0f;
  bool ok = true;
  for (int64_t j = 0; j < ind.d[axis]; ++j) {
    int64_t i = idx[ibase + j * iaxis_stride];
    if (i < -extent || i >= extent) {
      ok = false;
      continue;
    }
    if (i < 0) i += extent;
    dx[base + i * axis_stride] += dy[ibase + j * iaxis_stride];
  }
  return ok;
}

/// One term of NegativeLogLikelihoodLoss: target `cls` of sample i at position j (input viewed
/// as [N, C, inner]); `weight` gets the class's weight (1 without weights, 0 where ignored) and
/// the result is -input * weight. Returns false for a target outside [0, C) that is not ignored.
PLANNER_RT_HD inline bool nll_term(const float* input, const float* weights, int64_t cls, int64_t i,
                                   int64_t j, int64_t c, int64_t inner, bool ignore,
                                   int64_t ignored, double* loss, double* weight) {
  *loss = 0;
  *weight = 0;
  if (ignore && cls == ignored) return true;
  if (cls < 0 || cls >= c) return false;
  *weight = weights ? weights[cls] : 1.0;
  *loss = -static_cast<double>(input[(i * c + cls) * inner + j]) * *weight;
  return true;
}

/// The reduced loss (sum, or mean: over the weights counted; NaN when none is), summed in
/// element order; `bad` counts targets outside the classes.
PLANNER_RT_HD inline float nll_reduced(const float* input, const int64_t* target,
                                       const float* weights, int64_t n, int64_t c, int64_t inner,
                                       bool ignore, int64_t ignored, bool mean, int* bad) {
  double sum = 0, total = 0;
  for (int64_t k = 0; k < n * inner; ++k) {
    double loss = 0, weight = 0;
    if (!nll_term(input, weights, target[k], k / inner, k % inner, c, inner, ignore, ignored, &loss,
                  &weight))
      *bad = 1;
    sum += loss;
    total += weight;
  }
  if (!mean) return static_cast<float>(sum);
  return total == 0 ? static_cast<float>(0.0 / 0.0) : static_cast<float>(sum / total);
}

/// NLLLossGrad for target k (dInput zeroed before): -weight[cls] * share at the target's class,
/// where `share` is dY's part of this loss (dY[k] unreduced, dY[0] summed, dY[0] over the
/// weights counted for a mean). Returns false for a target outside [0, C) that is not ignored.
PLANNER_RT_HD inline bool nll_grad_term(const int64_t* target, const float* weights, float* dx,
                                        int64_t k, int64_t c, int64_t inner, bool ignore,
                                        int64_t ignored, double share) {
  const int64_t cls = target[k];
  if (ignore && cls == ignored) return true;
  if (cls < 0 || cls >= c) return false;
  dx[((k / inner) * c + cls) * inner + k % inner] =
      static_cast<float>(-(weights ? weights[cls] : 1.0) * share);
  return true;
}

/// The weights of the targets counted (a mean's divisor), in element order.
PLANNER_RT_HD inline double nll_weights(const int64_t* target, const float* weights, int64_t count,
                                        int64_t c, bool ignore, int64_t ignored) {
  double total = 0;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t cls = target[k];
    if ((ignore && cls == ignored) || cls < 0 || cls >= c) continue;
    total += weights ? weights[cls] : 1.0;
  }
  return total;
}

}  // namespace planner::rt::kernels
