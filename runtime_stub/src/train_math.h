// Training-mode element math shared by the cpu kernels and the cuda ones (docs/training.md):
// the batch-norm normalisation and data gradient from reduced statistics, and Dropout's
// counter-based mask. Plain C on scalars, callable from device code.
#pragma once

#include <math.h>
#include <stdint.h>

#include "unary_math.h"  // PLANNER_RT_HD

namespace planner::rt::kernels {

/// The largest rank DropoutTrain shards carry offsets for.
inline constexpr int kDropoutMaxRank = 8;

/// Batch-norm statistics of one channel from BatchNormStats' [sum(x)/count, sum(x^2)/count]:
/// mean, and 1/sqrt(var + eps) with the variance clamped at 0 against rounding.
struct ChannelStats {
  double mean = 0, inv_std = 1;
};

PLANNER_RT_HD inline ChannelStats channel_stats(double mean, double mean_sq, double eps) {
  double var = mean_sq - mean * mean;
  if (var < 0) var = 0;
  ChannelStats s;
  s.mean = mean;
  s.inv_std = 1.0 / sqrt(var + eps);
  return s;
}

/// BatchNormTrain's output: (x - mean) * inv_std * scale + bias.
PLANNER_RT_HD inline float batch_norm_train_value(float x, ChannelStats s, float scale,
                                                  float bias) {
  return static_cast<float>((x - s.mean) * s.inv_std * scale + bias);
}

/// BatchNormTrainGrad's output: scale * inv_std * (dy - dB/count - xhat * dScale/count).
PLANNER_RT_HD inline float batch_norm_train_grad_value(float dy, float x, ChannelStats s,
                                                       float scale, float dscale, float dbias,
                                                       double count) {
  const double xhat = (x - s.mean) * s.inv_std;
  return static_cast<float>(scale * s.inv_std * (dy - dbias / count - xhat * dscale / count));
}

/// Where one DropoutTrain shard lies in the whole tensor: its own shape, its offset and the
/// whole shape (equal to `local` and zero offsets when the op is not split).
struct DropoutLayout {
  int rank = 0;
  int64_t local[kDropoutMaxRank] = {};
  int64_t offset[kDropoutMaxRank] = {};
  int64_t full[kDropoutMaxRank] = {};
};

/// The row-major index in the whole tensor of the shard's element `e`.
PLANNER_RT_HD inline uint64_t dropout_global_index(const DropoutLayout& l, int64_t e) {
  uint64_t index = 0, stride = 1;
  for (int d = l.rank - 1; d >= 0; --d) {
    const int64_t i = e % l.local[d];
    e /= l.local[d];
    index += static_cast<uint64_t>(i + l.offset[d]) * stride;
    stride *= static_cast<uint64_t>(l.full[d]);
  }
  return index;
}

/// SplitMix64's finaliser of (seed, index): a counter-based generator, so an element's draw
/// depends on nothing but its seed and position.
PLANNER_RT_HD inline uint64_t dropout_hash(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Whether the element at `index` is kept: a uniform draw in [0, 1) on 24 bits, kept when it
/// is at least `ratio` (so ratio 0 keeps everything).
PLANNER_RT_HD inline bool dropout_keep(uint64_t seed, uint64_t index, float ratio) {
  const float u = static_cast<float>(dropout_hash(seed, index) >> 40) * (1.0f / 16777216.0f);
  return u >= ratio;
}

/// One element of DropoutTrain: y = keep ? x / (1 - ratio) : 0, and the mask.
PLANNER_RT_HD inline void dropout_train_element(const DropoutLayout& l, uint64_t seed, float ratio,
                                                const float* x, float* y, bool* mask, int64_t e) {
  const bool keep = dropout_keep(seed, dropout_global_index(l, e), ratio);
  y[e] = keep ? x[e] * (1.0f / (1.0f - ratio)) : 0.0f;
  if (mask) mask[e] = keep;
}

/// The optimizers' element updates. `gs` (attribute grad_scale, 1 unless the step is loss
/// scaled) multiplies the gradient first, as GradScaler's unscale does.
PLANNER_RT_HD inline float sgd_element(float p, float g, float lr, float gs) {
  return p - lr * (g * gs);
}

/// Momentum: v' = mu v + g gs; p' = p - lr v'. Writes v' to *v_out and returns p'.
PLANNER_RT_HD inline float momentum_element(float p, float g, float v, float lr, float mu, float gs,
                                            float* v_out) {
  const float nv = mu * v + g * gs;
  *v_out = nv;
  return p - lr * nv;
}

/// Adam with bias corrections c1 = 1 - b1^t, c2 = 1 - b2^t, in double: writes m' and v' and
/// returns p'.
PLANNER_RT_HD inline float adam_element(float p, float g, float m, float v, double lr, double b1,
                                        double b2, double eps, double c1, double c2, double gs,
                                        float* m_out, float* v_out) {
  const double gi = static_cast<double>(g) * gs;
  const double nm = b1 * m + (1 - b1) * gi;
  const double nv = b2 * v + (1 - b2) * gi * gi;
  *m_out = static_cast<float>(nm);
  *v_out = static_cast<float>(nv);
  return static_cast<float>(p - lr * (nm / c1) / (sqrt(nv / c2) + eps));
}

/// BatchNormRunningStats' output k (0 running mean, 1 running var, 2 saved mean, 3 saved var)
/// of a channel from its batch statistics (mean, mean of squares), the running mean and
/// variance it updates and the momentum (ONNX: running = input * momentum + batch * (1 -
/// momentum); the batch variance is the population one, clamped at 0 as std::max(0.0, v)).
PLANNER_RT_HD inline float running_stat(int k, float batch_mean, float batch_mean_sq, float mean,
                                        float var, double momentum) {
  const double bm = batch_mean;
  const double v = static_cast<double>(batch_mean_sq) - bm * bm;
  const double bv = 0.0 < v ? v : 0.0;
  const double batch = k % 2 == 0 ? bm : bv;
  return static_cast<float>(k >= 2 ? batch
                                   : (k == 0 ? mean : var) * momentum + batch * (1 - momentum));
}

}  // namespace planner::rt::kernels
