// The recurrent cells' element bodies (LSTM gates i,o,f,c; GRU z,r,h; RNN tanh), shared by the
// cpu and cuda backends (__host__ __device__ under nvcc; plain types only). One call handles
// one (batch row, hidden unit) element of one step; the matrix products between the calls are
// rnn_program.h's. tests/runtime/rnn_program_test.cpp runs them on the host against an
// independent reference of the ONNX definitions.
#pragma once

#include <stdint.h>

#include "unary_math.h"  // PLANNER_RT_HD, <math.h>

namespace planner::rt::kernels {

enum class RnnCell : int { kLstm, kGru, kRnn };

/// An operator's dimensions and attributes, and its sequence lengths (device or host memory,
/// as the backend's tensors are; both null: every row runs T steps).
struct RnnDims {
  RnnCell cell = RnnCell::kLstm;
  int64_t T = 0, B = 0, I = 0, H = 0, D = 1, G = 4;  ///< G: gates (LSTM 4, GRU 3, RNN 1)
  bool bidirectional = false, reverse = false;
  bool lbr = false;  ///< GRU linear_before_reset
  float clip = 0;    ///< 0: none
  const int32_t* lens32 = nullptr;
  const int64_t* lens64 = nullptr;
};

/// Row b's sequence length, clamped to [0, T] (the cpu entry points reject other values).
PLANNER_RT_HD inline int64_t rnn_len(const RnnDims& r, int64_t b) {
  int64_t v = r.lens32 ? r.lens32[b] : r.lens64 ? r.lens64[b] : r.T;
  return v < 0 ? 0 : v > r.T ? r.T : v;
}
PLANNER_RT_HD inline bool rnn_reversed(const RnnDims& r, int64_t d) {
  return r.bidirectional ? d == 1 : r.reverse;
}
/// The time row b handles at step s of direction d; -1 past its length.
PLANNER_RT_HD inline int64_t rnn_time(const RnnDims& r, int64_t d, int64_t s, int64_t b) {
  const int64_t len = rnn_len(r, b);
  if (s >= len) return -1;
  return rnn_reversed(r, d) ? len - 1 - s : s;
}
/// The step at which row b of direction d handles time t; -1 past its length.
PLANNER_RT_HD inline int64_t rnn_step_of(const RnnDims& r, int64_t d, int64_t t, int64_t b) {
  return rnn_time(r, d, t, b);  // the map is its own inverse
}

PLANNER_RT_HD inline float rnn_sigmoid(float x) {
  return x >= 0 ? 1.0f / (1.0f + ::expf(-x)) : ::expf(x) / (1.0f + ::expf(x));
}
/// The pre-activation after clip; *live = 0 where clip cut it (its gradient is zero).
PLANNER_RT_HD inline float rnn_clip(const RnnDims& r, float v, uint8_t* live) {
  if (r.clip > 0 && (v > r.clip || v < -r.clip)) {
    *live = 0;
    return v > r.clip ? r.clip : -r.clip;
  }
  *live = 1;
  return v;
}

/// The element bodies, one enumerator per kernel launch of rnn_program.h.
enum class RnnKernel : int {
  kGatherX,        ///< n = B*I: xs_s[b] = X[t] (zero past the length)
  kInitState,      ///< n = B*H: h = h0 or 0, c = c0 or 0
  kForward,        ///< n = B*H: LSTM, RNN and GRU with linear_before_reset, one whole step
  kGruGates,       ///< n = B*H: GRU (lbr 0): z, r and r*Hp
  kGruOutput,      ///< n = B*H: GRU (lbr 0): the candidate and the new state
  kBackward,       ///< n = B*H: the gate gradients of one step
  kGruResetGrad,   ///< n = B*H: GRU (lbr 0): the r gate's gradient from du
  kStateBackward,  ///< n = B*H: dHp from dG R (and GRU's own terms)
  kScatterDx,      ///< n = T*B*I: dX[t] += (dG W)_s
  kBiasGrad,       ///< n = G*H: dB columns summed over every step
  kGatesOut,       ///< n = T*B*G*H: the per-step gate gradients into the [T, D, B, GH] output
  kWeightsBias,    ///< n = G*H: LSTMGradWeights's dB from its [T, D, B, GH] dGates
};

/// What one launch reads and writes. Per-step arrays ([B, ...]) are the step's rows of the
/// [T, B, ...] tapes; the whole tapes are passed where a kernel spans every step.
struct RnnStep {
  RnnDims r;
  int64_t d = 0, s = 0;
  const float* x = nullptr;    ///< [T, B, I]
  float* xs = nullptr;         ///< [T, B, I] by step (kGatherX: the whole tape)
  const float* gx = nullptr;   ///< [B, GH]: xs_s W^T
  const float* gh = nullptr;   ///< [B, GH]: Hp R^T
  const float* wb = nullptr;   ///< [GH] input biases of direction d, or null
  const float* rb = nullptr;   ///< [GH] recurrent biases, or null
  float* h = nullptr;          ///< [B, H] state (kInitState: the target)
  float* c = nullptr;          ///< [B, H] LSTM cell state (kInitState: the target, or null)
  const float* h0 = nullptr;   ///< [B, H] kInitState's sources and the reverse padding's
  const float* c0 = nullptr;   ///< [B, H]
  float* act = nullptr;        ///< [B, GH] gates after activation
  uint8_t* live = nullptr;     ///< [B, GH]
  float* hprev = nullptr;      ///< [B, H] (tape) the state the step read
  float* cprev = nullptr;      ///< [B, H] (tape, LSTM)
  float* cell = nullptr;       ///< [B, H] (tape, LSTM): C_t
  float* lin = nullptr;        ///< [B, H] GRU: r*Hp (lbr 0) or Hp Rh^T + Rbh (lbr 1)
  const float* hh = nullptr;   ///< [B, H] GRU (lbr 0): (r*Hp) Rh^T
  float* y = nullptr;          ///< [T, D, B, H] or null
  float* hseq = nullptr;       ///< [T, D, B, H] or null: the hidden sequence, padding included
  const float* dy = nullptr;   ///< [T, D, B, H] or null
  float* dh = nullptr;         ///< [B, H]
  float* dc = nullptr;         ///< [B, H] (LSTM)
  float* dg = nullptr;         ///< [B, GH] (kBiasGrad, kGatesOut: every step, [T, B, GH])
  float* dlin = nullptr;       ///< [B, H] GRU (kBiasGrad: every step)
  const float* tmp = nullptr;  ///< [B, H] dG R (kScatterDx: [T, B, I] dG W by step)
  const float* du = nullptr;   ///< [B, H] GRU: dlin Rh
  float* out = nullptr;        ///< kScatterDx: dX; kBiasGrad, kWeightsBias: dB of direction d;
                               ///< kGatesOut: dGates [T, D, B, GH]
};

namespace rnn_body {

PLANNER_RT_HD inline void gather_x(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t s = e / (r.B * r.I), b = (e / r.I) % r.B, k = e % r.I;
  const int64_t t = rnn_time(r, p.d, s, b);
  p.xs[e] = t < 0 ? 0.0f : p.x[(t * r.B + b) * r.I + k];
}

PLANNER_RT_HD inline void init_state(const RnnStep& p, int64_t e) {
  p.h[e] = p.h0 ? p.h0[e] : 0.0f;
  if (p.c) p.c[e] = p.c0 ? p.c0[e] : 0.0f;
}

// Past row b's length the state passes through unchanged; the hidden sequence at the padding
// time s holds the last state (forward) or the initial one (reverse).
PLANNER_RT_HD inline void pass_through(const RnnStep& p, int64_t b, int64_t j) {
  const RnnDims& r = p.r;
  const int64_t e = b * r.H + j;
  if (p.hprev) p.hprev[e] = p.h[e];
  if (p.lin) p.lin[e] = 0.0f;
  if (!p.hseq) return;
  float v = p.h[e];
  if (rnn_reversed(r, p.d)) v = p.h0 ? p.h0[e] : 0.0f;
  p.hseq[((p.s * r.D + p.d) * r.B + b) * r.H + j] = v;
}

PLANNER_RT_HD inline void emit(const RnnStep& p, int64_t t, int64_t b, int64_t j) {
  const RnnDims& r = p.r;
  const int64_t at = ((t * r.D + p.d) * r.B + b) * r.H + j;
  const float v = p.h[b * r.H + j];
  if (p.y) p.y[at] = v;
  if (p.hseq) p.hseq[at] = v;
}

// The pre-activation of gate column k of row b: xs W^T + Hp R^T + Wb + Rb.
PLANNER_RT_HD inline float pre(const RnnStep& p, int64_t b, int64_t k) {
  const int64_t GH = p.r.G * p.r.H;
  return p.gx[b * GH + k] + p.gh[b * GH + k] + (p.wb ? p.wb[k] + p.rb[k] : 0.0f);
}

PLANNER_RT_HD inline void forward(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t H = r.H, GH = r.G * H, b = e / H, j = e % H;
  const int64_t t = rnn_time(r, p.d, p.s, b);
  if (t < 0) return pass_through(p, b, j);
  float* a = p.act + b * GH;
  uint8_t* lv = p.live + b * GH;
  if (p.hprev) p.hprev[e] = p.h[e];
  if (r.cell == RnnCell::kLstm) {
    for (int64_t g = 0; g < 4; ++g) {
      const int64_t k = g * H + j;
      const float v = rnn_clip(r, pre(p, b, k), &lv[k]);
      a[k] = g == 3 ? ::tanhf(v) : rnn_sigmoid(v);  // i, o, f: sigmoid; c: tanh
    }
    if (p.cprev) p.cprev[e] = p.c[e];
    const float ig = a[j], og = a[H + j], fg = a[2 * H + j], cg = a[3 * H + j];
    p.c[e] = fg * p.c[e] + ig * cg;
    p.h[e] = og * ::tanhf(p.c[e]);
    if (p.cell) p.cell[e] = p.c[e];
  } else if (r.cell == RnnCell::kRnn) {
    a[j] = ::tanhf(rnn_clip(r, pre(p, b, j), &lv[j]));
    p.h[e] = a[j];
  } else {  // GRU, linear_before_reset = 1
    for (int64_t g = 0; g < 2; ++g) {
      const int64_t k = g * H + j;
      a[k] = rnn_sigmoid(rnn_clip(r, pre(p, b, k), &lv[k]));
    }
    const int64_t k = 2 * H + j;
    const float l = p.gh[b * GH + k] + (p.rb ? p.rb[k] : 0.0f);
    if (p.lin) p.lin[e] = l;
    const float v = p.gx[b * GH + k] + a[H + j] * l + (p.wb ? p.wb[k] : 0.0f);
    a[k] = ::tanhf(rnn_clip(r, v, &lv[k]));
    p.h[e] = (1 - a[j]) * a[k] + a[j] * p.h[e];
  }
  emit(p, t, b, j);
}

// GRU without linear_before_reset, first half: z and r, and r*Hp into lin (the product's input).
PLANNER_RT_HD inline void gru_gates(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t H = r.H, GH = r.G * H, b = e / H, j = e % H;
  if (rnn_time(r, p.d, p.s, b) < 0) return pass_through(p, b, j);
  float* a = p.act + b * GH;
  uint8_t* lv = p.live + b * GH;
  if (p.hprev) p.hprev[e] = p.h[e];
  for (int64_t g = 0; g < 2; ++g) {
    const int64_t k = g * H + j;
    a[k] = rnn_sigmoid(rnn_clip(r, pre(p, b, k), &lv[k]));
  }
  p.lin[e] = a[H + j] * p.h[e];
}

// Second half: hn = tanh(xs Wh^T + (r*Hp) Rh^T + Rbh + Wbh), H = (1-z) hn + z Hp.
PLANNER_RT_HD inline void gru_output(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t H = r.H, GH = r.G * H, b = e / H, j = e % H;
  const int64_t t = rnn_time(r, p.d, p.s, b);
  if (t < 0) return;  // gru_gates passed it through
  float* a = p.act + b * GH;
  const int64_t k = 2 * H + j;
  const float v = p.gx[b * GH + k] + p.hh[e] + (p.rb ? p.rb[k] : 0.0f) + (p.wb ? p.wb[k] : 0.0f);
  a[k] = ::tanhf(rnn_clip(r, v, &p.live[b * GH + k]));
  p.h[e] = (1 - a[j]) * a[k] + a[j] * p.h[e];
  emit(p, t, b, j);
}

// The gate gradients of one step (dG, zero for rows past their length) from dH (plus dY), dC
// and the tape; dC is carried to the step before. GRU writes dlin: d(lin) for lbr 1, the
// candidate's pre-activation gradient for lbr 0 (whose r gradient needs dlin Rh first).
PLANNER_RT_HD inline void backward(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t H = r.H, GH = r.G * H, b = e / H, j = e % H;
  const int64_t t = rnn_time(r, p.d, p.s, b);
  float* g = p.dg + b * GH;
  if (t < 0) {
    for (int64_t k = 0; k < r.G; ++k) g[k * H + j] = 0.0f;
    if (p.dlin) p.dlin[e] = 0.0f;
    return;
  }
  if (p.dy) p.dh[e] += p.dy[((t * r.D + p.d) * r.B + b) * H + j];
  const float dh = p.dh[e];
  const float* a = p.act + b * GH;
  const uint8_t* lv = p.live + b * GH;
  if (r.cell == RnnCell::kLstm) {
    const float ig = a[j], og = a[H + j], fg = a[2 * H + j], cg = a[3 * H + j];
    const float tc = ::tanhf(p.cell[e]);
    const float dct = p.dc[e] + dh * og * (1 - tc * tc);
    g[j] = lv[j] ? dct * cg * ig * (1 - ig) : 0.0f;
    g[H + j] = lv[H + j] ? dh * tc * og * (1 - og) : 0.0f;
    g[2 * H + j] = lv[2 * H + j] ? dct * p.cprev[e] * fg * (1 - fg) : 0.0f;
    g[3 * H + j] = lv[3 * H + j] ? dct * ig * (1 - cg * cg) : 0.0f;
    p.dc[e] = dct * fg;
  } else if (r.cell == RnnCell::kRnn) {
    g[j] = lv[j] ? dh * (1 - a[j] * a[j]) : 0.0f;
  } else {
    const float z = a[j], rg = a[H + j], hn = a[2 * H + j];
    const float dhpre = lv[2 * H + j] ? dh * (1 - z) * (1 - hn * hn) : 0.0f;
    g[j] = lv[j] ? dh * (p.hprev[e] - hn) * z * (1 - z) : 0.0f;
    g[2 * H + j] = dhpre;
    if (r.lbr) {
      p.dlin[e] = dhpre * rg;
      g[H + j] = lv[H + j] ? dhpre * p.lin[e] * rg * (1 - rg) : 0.0f;
    } else {
      p.dlin[e] = dhpre;
      g[H + j] = 0.0f;  // gru_reset_grad, once du is known
    }
  }
}

// GRU (lbr 0): u = r*Hp feeds Rh, so dr = du * Hp with du = dlin Rh.
PLANNER_RT_HD inline void gru_reset_grad(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t H = r.H, GH = r.G * H, b = e / H, j = e % H;
  if (rnn_time(r, p.d, p.s, b) < 0) return;
  const float rg = p.act[b * GH + H + j];
  p.dg[b * GH + H + j] = p.live[b * GH + H + j] ? p.du[e] * p.hprev[e] * rg * (1 - rg) : 0.0f;
}

// dHp: dG R over the gates reading Hp directly (tmp), plus GRU's dH z and its reset path.
PLANNER_RT_HD inline void state_backward(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t H = r.H, GH = r.G * H, b = e / H, j = e % H;
  if (rnn_time(r, p.d, p.s, b) < 0) return;  // rows past their length carry dH unchanged
  if (r.cell != RnnCell::kGru) {
    p.dh[e] = p.tmp[e];
    return;
  }
  const float* a = p.act + b * GH;
  const float extra = r.lbr ? p.du[e] : p.du[e] * a[H + j];
  p.dh[e] = p.dh[e] * a[j] + p.tmp[e] + extra;
}

PLANNER_RT_HD inline void scatter_dx(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t t = e / (r.B * r.I), b = (e / r.I) % r.B, k = e % r.I;
  const int64_t s = rnn_step_of(r, p.d, t, b);
  if (s >= 0) p.out[e] += p.tmp[(s * r.B + b) * r.I + k];
}

// dB of direction d: out[0, GH) += sum dG (input biases), out[GH, 2GH) += the same, except
// GRU's Rbh with lbr 1, which sits inside the reset product (its gradient is dlin). Sums run
// over steps, then rows, ascending.
PLANNER_RT_HD inline void bias_grad(const RnnStep& p, int64_t k) {
  const RnnDims& r = p.r;
  const int64_t H = r.H, GH = r.G * H, rows = r.T * r.B;
  float w = 0.0f, l = 0.0f;
  const bool from_lin = r.cell == RnnCell::kGru && r.lbr && k >= 2 * H;
  for (int64_t n = 0; n < rows; ++n) {
    w += p.dg[n * GH + k];
    if (from_lin) l += p.dlin[n * H + k - 2 * H];
  }
  p.out[k] += w;
  p.out[GH + k] += from_lin ? l : w;
}

PLANNER_RT_HD inline void gates_out(const RnnStep& p, int64_t e) {
  const RnnDims& r = p.r;
  const int64_t GH = r.G * r.H;
  const int64_t t = e / (r.B * GH), b = (e / GH) % r.B, k = e % GH;
  const int64_t s = rnn_step_of(r, p.d, t, b);
  if (s >= 0) p.out[((t * r.D + p.d) * r.B + b) * GH + k] = p.dg[(s * r.B + b) * GH + k];
}

// LSTMGradWeights's dB: both halves are sum over t, b of dGates[t, d, b, k].
PLANNER_RT_HD inline void weights_bias(const RnnStep& p, int64_t k) {
  const RnnDims& r = p.r;
  const int64_t GH = r.G * r.H;
  float w = 0.0f;
  for (int64_t t = 0; t < r.T; ++t)
    for (int64_t b = 0; b < r.B; ++b) w += p.dg[((t * r.D + p.d) * r.B + b) * GH + k];
  p.out[k] = w;
  p.out[GH + k] = w;
}

}  // namespace rnn_body

/// Runs kernel `k`'s body for element e.
PLANNER_RT_HD inline void rnn_element(RnnKernel k, const RnnStep& p, int64_t e) {
  switch (k) {
    case RnnKernel::kGatherX:
      return rnn_body::gather_x(p, e);
    case RnnKernel::kInitState:
      return rnn_body::init_state(p, e);
    case RnnKernel::kForward:
      return rnn_body::forward(p, e);
    case RnnKernel::kGruGates:
      return rnn_body::gru_gates(p, e);
    case RnnKernel::kGruOutput:
      return rnn_body::gru_output(p, e);
    case RnnKernel::kBackward:
      return rnn_body::backward(p, e);
    case RnnKernel::kGruResetGrad:
      return rnn_body::gru_reset_grad(p, e);
    case RnnKernel::kStateBackward:
      return rnn_body::state_backward(p, e);
    case RnnKernel::kScatterDx:
      return rnn_body::scatter_dx(p, e);
    case RnnKernel::kBiasGrad:
      return rnn_body::bias_grad(p, e);
    case RnnKernel::kGatesOut:
      return rnn_body::gates_out(p, e);
    case RnnKernel::kWeightsBias:
      return rnn_body::weights_bias(p, e);
  }
}

}  // namespace planner::rt::kernels
