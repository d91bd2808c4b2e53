// The recurrent operators as a sequence of matrix products and element kernels (rnn_math.h),
// written once for both backends. A backend supplies `Dev`:
//   void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
//             int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
//                                  row-major C = alpha op(A) op(B) + beta C
//   void run(RnnKernel k, const RnnStep& p, int64_t n);   rnn_element(k, p, e) for e in [0, n)
//   void copy(float* dst, const float* src, int64_t n);   n floats
//   void zero(void* dst, int64_t bytes);
// The cpu backend runs it on host memory with BLAS, the cuda backend on device memory with
// cuBLAS and one launch per element kernel. The input products of every step are one GEMM
// over the whole sequence (as cuDNN does), the recurrent product one GEMM per step, and the
// weight gradients one GEMM over every step.
#pragma once

#include <stdint.h>

#include "rnn_math.h"

namespace planner::rt::kernels {

/// One recurrent call: the forward inputs, the outputs and gradients present (null: absent),
/// and a workspace of rnn_workspace_floats() floats.
struct RnnCall {
  RnnDims r;
  const float *X = nullptr, *W = nullptr, *R = nullptr, *bias = nullptr;  ///< bias [D, 2GH]
  const float *h0 = nullptr, *c0 = nullptr;                               ///< [D, B, H]
  float *y = nullptr, *yh = nullptr, *yc = nullptr;                       ///< forward outputs
  const float *dy = nullptr, *dyh = nullptr, *dyc = nullptr;              ///< output gradients
  float *dx = nullptr, *dw = nullptr, *dr = nullptr, *db = nullptr;       ///< gradients
  float *dh0 = nullptr, *dc0 = nullptr;
  float* dgates = nullptr;  ///< [T, D, B, GH] by time (LSTMGradData)
  float* hseq = nullptr;    ///< [T, D, B, H] the hidden sequence (LSTMGradData)
  float* ws = nullptr;
};

/// The workspace one call needs, in floats: per-step state, the input products and, for the
/// backward pass, the tape of every step.
inline int64_t rnn_workspace_floats(const RnnDims& r, bool backward) {
  const int64_t TB = r.T * r.B, BH = r.B * r.H, GH = r.G * r.H;
  const int64_t bytes_live = (backward ? TB : r.B) * GH;  // uint8 flags
  int64_t n = 6 * BH + 2 * r.B * GH + TB * r.I + TB * GH + (bytes_live + 3) / 4;
  if (backward)
    n += TB * GH /*act*/ + 4 * TB * r.H /*hprev cprev cell lin*/ + TB * GH /*dg*/ +
         TB * r.H /*dlin*/ + TB * r.I /*dG W*/;
  return n;
}

namespace rnn_program_detail {

// A launch's arguments for direction d; the rest is filled per kernel.
inline RnnStep step_of(const RnnDims& r, int64_t d) {
  RnnStep p;
  p.r = r;
  p.d = d;
  return p;
}

struct Space {
  float *h, *c, *dh, *dc, *hh, *tmp;                          // [B, H]
  float *gh, *act1;                                           // [B, GH]
  float *xs, *gx;                                             // [T, B, I], [T, B, GH]
  float *act, *hprev, *cprev, *cell, *lin, *dg, *dlin, *dxs;  // tapes (backward)
  uint8_t* live;
};

inline Space carve(const RnnDims& r, bool backward, float* ws) {
  const int64_t TB = r.T * r.B, BH = r.B * r.H, GH = r.G * r.H;
  Space s{};
  float* p = ws;
  auto take = [&p](int64_t n) {
    float* q = p;
    p += n;
    return q;
  };
  s.h = take(BH), s.c = take(BH), s.dh = take(BH), s.dc = take(BH), s.hh = take(BH);
  s.tmp = take(BH);
  s.gh = take(r.B * GH), s.act1 = take(r.B * GH);
  s.xs = take(TB * r.I), s.gx = take(TB * GH);
  if (backward) {
    s.act = take(TB * GH), s.hprev = take(TB * r.H), s.cprev = take(TB * r.H);
    s.cell = take(TB * r.H), s.lin = take(TB * r.H), s.dg = take(TB * GH);
    s.dlin = take(TB * r.H), s.dxs = take(TB * r.I);
  }
  s.live = reinterpret_cast<uint8_t*>(p);
  return s;
}

// Direction d's forward pass: Y (by time), the final state into h/c of `sp`, and, with
// `tape`, every step's gate values and states for the backward pass.
template <class Dev>
void forward_direction(Dev& dev, const RnnCall& a, int64_t d, const Space& sp, bool tape) {
  const RnnDims& r = a.r;
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, GH = r.G * H, BH = B * H;
  const float* W = a.W + d * GH * I;
  const float* R = a.R + d * GH * H;
  RnnStep p = step_of(r, d);
  p.x = a.X;
  p.xs = sp.xs;
  dev.run(RnnKernel::kGatherX, p, T * B * I);
  dev.gemm(false, true, T * B, GH, I, 1.0f, sp.xs, I, W, I, 0.0f, sp.gx, GH);
  p.h = sp.h;
  p.c = r.cell == RnnCell::kLstm ? sp.c : nullptr;
  p.h0 = a.h0 ? a.h0 + d * BH : nullptr;
  p.c0 = a.c0 ? a.c0 + d * BH : nullptr;
  dev.run(RnnKernel::kInitState, p, BH);
  p.wb = a.bias ? a.bias + d * 2 * GH : nullptr;
  p.rb = a.bias ? p.wb + GH : nullptr;
  p.gh = sp.gh;
  p.hh = sp.hh;
  p.y = a.y;
  p.hseq = a.hseq;
  const bool gru0 = r.cell == RnnCell::kGru && !r.lbr;
  for (int64_t s = 0; s < T; ++s) {
    p.s = s;
    p.gx = sp.gx + s * B * GH;
    p.act = tape ? sp.act + s * B * GH : sp.act1;
    p.live = sp.live + (tape ? s * B * GH : 0);
    p.hprev = tape ? sp.hprev + s * BH : nullptr;
    p.cprev = tape && r.cell == RnnCell::kLstm ? sp.cprev + s * BH : nullptr;
    p.cell = tape && r.cell == RnnCell::kLstm ? sp.cell + s * BH : nullptr;
    p.lin = r.cell == RnnCell::kGru ? (tape ? sp.lin + s * BH : sp.tmp) : nullptr;
    dev.gemm(false, true, B, gru0 ? 2 * H : GH, H, 1.0f, sp.h, H, R, H, 0.0f, sp.gh, GH);
    if (!gru0) {
      dev.run(RnnKernel::kForward, p, BH);
      continue;
    }
    dev.run(RnnKernel::kGruGates, p, BH);
    dev.gemm(false, true, B, H, H, 1.0f, p.lin, H, R + 2 * H * H, H, 0.0f, sp.hh, H);
    dev.run(RnnKernel::kGruOutput, p, BH);
  }
}

}  // namespace rnn_program_detail

/// LSTM, GRU, RNN forward: Y (zero past each row's length), Y_h, Y_c, each optional.
template <class Dev>
void rnn_forward_program(Dev& dev, const RnnCall& a) {
  const RnnDims& r = a.r;
  const int64_t BH = r.B * r.H;
  const auto sp = rnn_program_detail::carve(r, false, a.ws);
  if (a.y) dev.zero(a.y, r.T * r.D * BH * 4);
  for (int64_t d = 0; d < r.D; ++d) {
    rnn_program_detail::forward_direction(dev, a, d, sp, false);
    if (a.yh) dev.copy(a.yh + d * BH, sp.h, BH);
    if (a.yc) dev.copy(a.yc + d * BH, sp.c, BH);
  }
}

/// Back-propagation through time: re-runs each direction's forward pass with a tape, walks the
/// steps backwards, then forms the weight, bias and input gradients over every step at once.
/// Every gradient output present is overwritten.
template <class Dev>
void rnn_backward_program(Dev& dev, const RnnCall& a) {
  const RnnDims& r = a.r;
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, D = r.D, GH = r.G * H, BH = B * H;
  const auto sp = rnn_program_detail::carve(r, true, a.ws);
  const bool gru = r.cell == RnnCell::kGru;
  const int64_t gr = gru ? 2 * H : GH;  // gates whose pre-activation reads Hp R^T directly
  for (float* o : {a.dx, a.dw, a.dr, a.db, a.dh0, a.dc0, a.dgates, a.hseq}) {
    if (!o) continue;
    const int64_t n = o == a.dx       ? T * B * I
                      : o == a.dw     ? D * GH * I
                      : o == a.dr     ? D * GH * H
                      : o == a.db     ? D * 2 * GH
                      : o == a.dgates ? T * D * B * GH
                      : o == a.hseq   ? T * D * BH
                                      : D * BH;
    dev.zero(o, n * 4);
  }
  for (int64_t d = 0; d < D; ++d) {
    rnn_program_detail::forward_direction(dev, a, d, sp, true);
    const float* W = a.W + d * GH * I;
    const float* R = a.R + d * GH * H;
    RnnStep p = rnn_program_detail::step_of(r, d);
    p.h = sp.dh;
    p.c = r.cell == RnnCell::kLstm ? sp.dc : nullptr;
    p.h0 = a.dyh ? a.dyh + d * BH : nullptr;
    p.c0 = a.dyc ? a.dyc + d * BH : nullptr;
    dev.run(RnnKernel::kInitState, p, BH);  // dH, dC from dY_h, dY_c
    p.h = p.c = nullptr;
    p.h0 = p.c0 = nullptr;
    p.dy = a.dy;
    p.dh = sp.dh;
    p.dc = sp.dc;
    p.tmp = sp.tmp;
    p.du = sp.hh;
    for (int64_t s = T - 1; s >= 0; --s) {
      p.s = s;
      p.act = sp.act + s * B * GH;
      p.live = sp.live + s * B * GH;
      p.hprev = sp.hprev + s * BH;
      p.cprev = sp.cprev + s * BH;
      p.cell = sp.cell + s * BH;
      p.lin = sp.lin + s * BH;
      p.dg = sp.dg + s * B * GH;
      p.dlin = gru ? sp.dlin + s * BH : nullptr;
      dev.run(RnnKernel::kBackward, p, BH);
      if (gru) {
        dev.gemm(false, false, B, H, H, 1.0f, p.dlin, H, R + 2 * H * H, H, 0.0f, sp.hh, H);
        if (!r.lbr) dev.run(RnnKernel::kGruResetGrad, p, BH);
      }
      dev.gemm(false, false, B, H, gr, 1.0f, p.dg, GH, R, H, 0.0f, sp.tmp, H);
      dev.run(RnnKernel::kStateBackward, p, BH);
    }
    const int64_t TB = T * B;
    if (a.dw)
      dev.gemm(true, false, GH, I, TB, 1.0f, sp.dg, GH, sp.xs, I, 1.0f, a.dw + d * GH * I, I);
    if (a.dr) {
      float* dr = a.dr + d * GH * H;
      dev.gemm(true, false, gr, H, TB, 1.0f, sp.dg, GH, sp.hprev, H, 1.0f, dr, H);
      if (gru)  // the h block: dlin^T Hp (lbr 1) or dlin^T (r*Hp) (lbr 0)
        dev.gemm(true, false, H, H, TB, 1.0f, sp.dlin, H, r.lbr ? sp.hprev : sp.lin, H, 1.0f,
                 dr + 2 * H * H, H);
    }
    p.dg = sp.dg;
    p.dlin = sp.dlin;
    if (a.db) {
      p.out = a.db + d * 2 * GH;
      dev.run(RnnKernel::kBiasGrad, p, GH);
    }
    if (a.dx) {
      dev.gemm(false, false, TB, I, GH, 1.0f, sp.dg, GH, W, I, 0.0f, sp.dxs, I);
      p.tmp = sp.dxs;
      p.out = a.dx;
      dev.run(RnnKernel::kScatterDx, p, TB * I);
    }
    if (a.dgates) {
      p.out = a.dgates;
      dev.run(RnnKernel::kGatesOut, p, TB * GH);
    }
    if (a.dh0) dev.copy(a.dh0 + d * BH, sp.dh, BH);
    if (a.dc0) dev.copy(a.dc0 + d * BH, sp.dc, BH);
  }
}

/// LSTMGradWeights: dW_d = sum_t dG[t, d]^T X[t], dR_d = sum_t dG[t, d]^T Hprev_d(t) (H at the
/// step before, initial_h or zero at the first), dB_d = [sum dG, sum dG]; X [T, B, I], Hs and
/// dGates by time with directions interleaved ([T, D, B, ...]). Outputs present are overwritten.
template <class Dev>
void lstm_grad_weights_program(Dev& dev, const RnnDims& r, const float* X, const float* Hs,
                               const float* h0, const float* dG, float* dw, float* dr, float* db) {
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, D = r.D, GH = r.G * H;
  if (dw) dev.zero(dw, D * GH * I * 4);
  if (dr) dev.zero(dr, D * GH * H * 4);
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = rnn_reversed(r, d);
    if (dw && D == 1)  // one product over every step
      dev.gemm(true, false, GH, I, T * B, 1.0f, dG, GH, X, I, 1.0f, dw, I);
    for (int64_t t = 0; t < T; ++t) {
      const float* g = dG + (t * D + d) * B * GH;
      if (dw && D > 1)
        dev.gemm(true, false, GH, I, B, 1.0f, g, GH, X + t * B * I, I, 1.0f, dw + d * GH * I, I);
      if (!dr) continue;
      const int64_t prev = rev ? t + 1 : t - 1;
      const float* hp = prev >= 0 && prev < T ? Hs + (prev * D + d) * B * H
                        : h0                  ? h0 + d * B * H
                                              : nullptr;  // zero: no contribution
      if (hp) dev.gemm(true, false, GH, H, B, 1.0f, g, GH, hp, H, 1.0f, dr + d * GH * H, H);
    }
    if (db) {
      RnnStep p = rnn_program_detail::step_of(r, d);
      p.dg = const_cast<float*>(dG);
      p.out = db + d * 2 * GH;
      dev.run(RnnKernel::kWeightsBias, p, GH);
    }
  }
}

}  // namespace planner::rt::kernels
