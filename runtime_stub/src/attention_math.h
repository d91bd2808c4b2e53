// ai.planner.Attention (fused, FlashAttention-style: no S x T tensor is kept) and
// ai.planner.AttentionGrad as the cpu and cuda backends compute them, one row at a time
// (__host__ __device__ under nvcc; plain types only): a query row's LSE and Y, a query row's Δ
// and dQ, a key row's dK and dV. The scores are recomputed wherever they are needed. Every sum
// is accumulated in double in a fixed order (keys ascending for a query row, queries ascending
// for a key row), so a row's result does not depend on which backend, thread or shard computes
// it. attention.cpp (cpu) and cuda/attention.cu (a thread per row) call these bodies;
// tests/runtime/attention_test.cpp checks them against a materialized reference, finite
// differences and PyTorch.
#pragma once

#include <stdint.h>

#include "unary_math.h"  // PLANNER_RT_HD, <math.h>

namespace planner::rt::kernels {

/// One call's geometry and attributes: `batch` slices (the product of the leading dimensions),
/// each Q [s, d], K [t, d], V [t, e]; the optional Mask [s, t] is shared by every slice.
struct AttentionDims {
  int64_t batch = 1, s = 0, t = 0, d = 0, e = 0;
  double scale = 1;
  bool causal = false;
  int64_t query_offset = 0, key_offset = 0;  ///< global positions of query row 0 and key row 0
};

/// A call's tensors (host or device memory, row-major); absent ones are nullptr.
struct AttentionTensors {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* mask = nullptr;
  const float* dy = nullptr;   ///< gradient: dY [batch, s, e]
  const float* y = nullptr;    ///< gradient: the forward Y [batch, s, e]
  const float* lse = nullptr;  ///< gradient: the forward LSE [batch, s]
  float* out_y = nullptr;      ///< forward: Y
  float* out_lse = nullptr;    ///< forward: LSE
  float* dq = nullptr;
  float* dk = nullptr;
  float* dv = nullptr;
  double* delta = nullptr;  ///< gradient scratch [batch, s]: Δ = Σ_e dY·Y of each query row
};

/// The accumulator width a device thread keeps (in registers or local memory): rows wider than
/// it are done in chunks of columns, each re-reading the scores. The chunking does not change
/// any sum (each column still adds its terms in the same order), so the cpu, which takes the
/// whole row in one chunk, computes the same values.
inline constexpr int64_t kAttentionChunk = 32;

/// The keys query row s may attend to are [0, end): all of them, or with `causal` those whose
/// global position is not after the query's.
PLANNER_RT_HD inline int64_t attention_key_end(const AttentionDims& a, int64_t s) {
  if (!a.causal) return a.t;
  const int64_t last = s + a.query_offset - a.key_offset;  // the last key t allowed
  return last < 0 ? 0 : (last + 1 > a.t ? a.t : last + 1);
}

/// The queries that attend to key row t are [begin, s): all of them, or with `causal` those
/// whose global position is not before the key's.
PLANNER_RT_HD inline int64_t attention_query_begin(const AttentionDims& a, int64_t t) {
  if (!a.causal) return 0;
  const int64_t first = t + a.key_offset - a.query_offset;
  return first < 0 ? 0 : (first > a.s ? a.s : first);
}

/// score = scale · Σ_d q·k + Mask[s, t] (in double). False where the score is -inf (a masked
/// key); the causal mask is applied by the callers' loop bounds.
PLANNER_RT_HD inline bool attention_score(const float* q_row, const float* k_row, const float* mask,
                                          const AttentionDims& a, int64_t s, int64_t t,
                                          double* score) {
  double dot = 0;
  for (int64_t i = 0; i < a.d; ++i) dot += static_cast<double>(q_row[i]) * k_row[i];
  double sc = a.scale * dot;
  if (mask) sc += mask[s * a.t + t];
  *score = sc;
  return !(sc == -HUGE_VAL);
}

/// P[s, t] = exp(score − LSE[s]) for an attended key; false where the key is masked or the row
/// has none (LSE = -inf), whose P is 0.
PLANNER_RT_HD inline bool attention_prob(const float* q_row, const float* k_row, const float* mask,
                                         const AttentionDims& a, int64_t s, int64_t t, double lse,
                                         double* prob) {
  double sc = 0;
  if (lse == -HUGE_VAL || !attention_score(q_row, k_row, mask, a, s, t, &sc)) return false;
  *prob = ::exp(sc - lse);
  return true;
}

/// Σ_i a[i]·b[i] over n floats, in double.
PLANNER_RT_HD inline double attention_dot(const float* x, const float* y, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * y[i];
  return sum;
}

/// Query row `row` (= slice · s + s): its slice and position, its Q row, and its slice's K
/// and V.
struct AttentionQueryRow {
  int64_t s;
  const float* q;
  const float* k;
  const float* v;
};
PLANNER_RT_HD inline AttentionQueryRow attention_query_row(const AttentionTensors& p,
                                                           const AttentionDims& a, int64_t row) {
  const int64_t b = row / a.s;
  return {row % a.s, p.q + row * a.d, p.k + b * a.t * a.d, p.v + b * a.t * a.e};
}

/// The forward pass of query row `row` (= slice · s + s): LSE (pass 1: the running maximum and
/// the sum of exponentials, rescaled when the maximum grows), then Y = Σ_t exp(score − LSE) V
/// (pass 2, `chunk` columns at a time into `acc`). A row with no attended key gets Y = 0 and
/// LSE = -inf. Either output may be absent (nullptr).
PLANNER_RT_HD inline void attention_forward_row(const AttentionTensors& p, const AttentionDims& a,
                                                int64_t row, double* acc, int64_t chunk) {
  const AttentionQueryRow r = attention_query_row(p, a, row);
  const int64_t s = r.s;
  const float *q = r.q, *k = r.k, *v = r.v;
  const int64_t end = attention_key_end(a, s);
  double m = -HUGE_VAL, l = 0;
  for (int64_t t = 0; t < end; ++t) {
    double sc = 0;
    if (!attention_score(q, k + t * a.d, p.mask, a, s, t, &sc)) continue;
    if (sc > m) {
      l = l * ::exp(m - sc) + 1;
      m = sc;
    } else {
      l += ::exp(sc - m);
    }
  }
  const bool none = l == 0;
  const double lse = none ? -HUGE_VAL : m + ::log(l);
  if (p.out_lse) p.out_lse[row] = static_cast<float>(lse);
  if (!p.out_y) return;
  float* y = p.out_y + row * a.e;
  for (int64_t e0 = 0; e0 < a.e; e0 += chunk) {
    const int64_t w = a.e - e0 < chunk ? a.e - e0 : chunk;
    for (int64_t j = 0; j < w; ++j) acc[j] = 0;
    for (int64_t t = 0; t < end && !none; ++t) {
      double sc = 0;
      if (!attention_score(q, k + t * a.d, p.mask, a, s, t, &sc)) continue;
      const double pr = ::exp(sc - lse);
      const float* vr = v + t * a.e + e0;
      for (int64_t j = 0; j < w; ++j) acc[j] += pr * vr[j];
    }
    for (int64_t j = 0; j < w; ++j) y[e0 + j] = static_cast<float>(acc[j]);
  }
}

/// Δ of query row `row`: Σ_e dY·Y, into p.delta[row].
PLANNER_RT_HD inline void attention_delta_row(const AttentionTensors& p, const AttentionDims& a,
                                              int64_t row) {
  p.delta[row] = attention_dot(p.dy + row * a.e, p.y + row * a.e, a.e);
}

/// dQ of query row `row`: scale · Σ_t dS[s, t] K[t], dS = P (dP − Δ), dP = Σ_e dY[s]·V[t]
/// (p.delta filled before), `chunk` columns at a time into `acc`.
PLANNER_RT_HD inline void attention_grad_q_row(const AttentionTensors& p, const AttentionDims& a,
                                               int64_t row, double* acc, int64_t chunk) {
  const AttentionQueryRow r = attention_query_row(p, a, row);
  const int64_t s = r.s;
  const float *q = r.q, *k = r.k, *v = r.v;
  const float* dy = p.dy + row * a.e;
  const double lse = p.lse[row], delta = p.delta[row];
  const int64_t end = attention_key_end(a, s);
  for (int64_t d0 = 0; d0 < a.d; d0 += chunk) {
    const int64_t w = a.d - d0 < chunk ? a.d - d0 : chunk;
    for (int64_t j = 0; j < w; ++j) acc[j] = 0;
    for (int64_t t = 0; t < end; ++t) {
      double pr = 0;
      if (!attention_prob(q, k + t * a.d, p.mask, a, s, t, lse, &pr)) continue;
      const double ds = pr * (attention_dot(dy, v + t * a.e, a.e) - delta);
      const float* kr = k + t * a.d + d0;
      for (int64_t j = 0; j < w; ++j) acc[j] += ds * kr[j];
    }
    float* dq = p.dq + row * a.d + d0;
    for (int64_t j = 0; j < w; ++j) dq[j] = static_cast<float>(a.scale * acc[j]);
  }
}

/// dK and dV of key row `row` (= slice · t + t), each when wanted (non-null): dV = Σ_s P[s, t]
/// dY[s], dK = scale · Σ_s dS[s, t] Q[s] (p.delta filled before when dK is wanted), over the
/// queries in order, `chunk` columns of each at a time into `acc` (2 · chunk doubles: dK's,
/// then dV's).
PLANNER_RT_HD inline void attention_grad_kv_row(const AttentionTensors& p, const AttentionDims& a,
                                                int64_t row, double* acc, int64_t chunk) {
  const int64_t b = row / a.t, t = row % a.t;
  const float* kr = p.k + row * a.d;
  const float* vr = p.v + row * a.e;
  const float* q = p.q + b * a.s * a.d;
  const float* dy = p.dy + b * a.s * a.e;
  const float* lse = p.lse + b * a.s;
  const double* delta = p.delta ? p.delta + b * a.s : nullptr;
  const int64_t dk_width = p.dk ? a.d : 0, dv_width = p.dv ? a.e : 0;
  const int64_t width = dk_width > dv_width ? dk_width : dv_width;
  const int64_t begin = attention_query_begin(a, t);
  double* ak = acc;
  double* av = acc + chunk;
  for (int64_t c0 = 0; c0 < width; c0 += chunk) {
    const int64_t wk = dk_width - c0 < 0 ? 0 : (dk_width - c0 < chunk ? dk_width - c0 : chunk);
    const int64_t wv = dv_width - c0 < 0 ? 0 : (dv_width - c0 < chunk ? dv_width - c0 : chunk);
    for (int64_t j = 0; j < wk; ++j) ak[j] = 0;
    for (int64_t j = 0; j < wv; ++j) av[j] = 0;
    for (int64_t s = begin; s < a.s; ++s) {
      double pr = 0;
      if (!attention_prob(q + s * a.d, kr, p.mask, a, s, t, lse[s], &pr)) continue;
      const float* dys = dy + s * a.e;
      for (int64_t j = 0; j < wv; ++j) av[j] += pr * dys[c0 + j];
      if (wk == 0) continue;
      const double ds = pr * (attention_dot(dys, vr, a.e) - delta[s]);
      const float* qs = q + s * a.d + c0;
      for (int64_t j = 0; j < wk; ++j) ak[j] += ds * qs[j];
    }
    for (int64_t j = 0; j < wk; ++j) p.dk[row * a.d + c0 + j] = static_cast<float>(a.scale * ak[j]);
    for (int64_t j = 0; j < wv; ++j) p.dv[row * a.e + c0 + j] = static_cast<float>(av[j]);
  }
}

}  // namespace planner::rt::kernels
