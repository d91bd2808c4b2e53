// An independent reference of ONNX's LSTM, GRU and RNN and the runtime's gradient operators,
// written as the definitions read (one row and one step at a time, per-step BLAS calls), for
// tests/runtime/rnn_program_test.cpp to hold the runtime's kernels (rnn_program.h, the code
// both backends run) against. Forward and reverse directions, sequence lengths, clip, GRU
// linear_before_reset. Inputs, attributes and outputs are read by the runtime's shared checks
// (rnn.h); the arithmetic is this file's own.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "rnn_reference.h"

#include "../../runtime_stub/src/rnn.h"

namespace rnn_reference {

using namespace planner::rt;
using namespace planner::rt::kernels;

namespace {

float sigm(float x) {
  return x >= 0 ? 1.0f / (1.0f + std::exp(-x)) : std::exp(x) / (1.0f + std::exp(x));
}

/// The recurrent cell an operator runs.
enum class Cell { kLstm, kGru, kRnn };

struct Rnn {
  Cell cell = Cell::kLstm;
  bool lstm = true;   // cell == kLstm
  int64_t gates = 4;  // 4 (LSTM), 3 (GRU) or 1 (RNN)
  int64_t T = 0, B = 0, I = 0, H = 0, D = 1;
  bool bidirectional = false, reverse = false;
  float clip = 0;  // 0: none
  bool linear_before_reset = false;
  const float* X = nullptr;     // [T, B, I]
  const float* W = nullptr;     // [D, G*H, I]
  const float* R = nullptr;     // [D, G*H, H]
  const float* bias = nullptr;  // [D, 2*G*H] or null
  const float* h0 = nullptr;    // [D, B, H] or null
  const float* c0 = nullptr;    // [D, B, H] or null (LSTM)
  std::vector<int64_t> lens;    // [B]
  bool reversed(int64_t d) const { return bidirectional ? d == 1 : reverse; }
  // The time index batch row b handles at step s of direction d, or -1 when the step is past
  // its sequence length.
  int64_t time_of(int64_t d, int64_t s, int64_t b) const {
    const int64_t len = lens[static_cast<size_t>(b)];
    if (s >= len) return -1;
    return reversed(d) ? len - 1 - s : s;
  }
};

// The reference's view of a call the runtime's shared checks read (rnn.h: the arithmetic
// here is independent of rnn_program.h, the reading of inputs and attributes is not). Every
// present output is zero-filled.
Rnn from_call(const KernelContext& ctx, RnnCell cell, RnnOp op, RnnCall* call) {
  *call = parse_rnn_call(ctx, cell, op, true);
  const RnnDims& d = call->r;
  Rnn r;
  r.cell = cell == RnnCell::kLstm ? Cell::kLstm : cell == RnnCell::kGru ? Cell::kGru : Cell::kRnn;
  r.lstm = cell == RnnCell::kLstm;
  r.gates = d.G;
  r.T = d.T, r.B = d.B, r.I = d.I, r.H = d.H, r.D = d.D;
  r.bidirectional = d.bidirectional, r.reverse = d.reverse;
  r.clip = d.clip;
  r.linear_before_reset = d.lbr;
  r.X = call->X, r.W = call->W, r.R = call->R, r.bias = call->bias, r.h0 = call->h0;
  r.c0 = call->c0;
  for (int64_t b = 0; b < d.B; ++b)
    r.lens.push_back(d.lens32 ? d.lens32[b] : d.lens64 ? d.lens64[b] : d.T);
  for (size_t k = 0; k < ctx.outputs.size(); ++k)
    if (ctx.has_out(k)) std::memset(ctx.out(k).data, 0, ctx.out(k).bytes());
  return r;
}

// What one direction's forward pass keeps for the backward pass, per step s.
struct Tape {
  std::vector<float> xs;      // [T, B, I]  the inputs each row read (zero when invalid)
  std::vector<float> hprev;   // [T, B, H]
  std::vector<float> cprev;   // [T, B, H]  LSTM
  std::vector<float> act;     // [T, B, G*H] gate values after their activation
  std::vector<uint8_t> live;  // [T, B, G*H] 0 where clip cut the pre-activation (zero gradient)
  std::vector<float> cell;    // [T, B, H]  LSTM: C_t
  std::vector<float> lin;     // [T, B, H]  GRU: r*Hp (lbr=0) or Hp Rh^T + Rbh (lbr=1)
};

float clip_value(const Rnn& r, float v, uint8_t* live) {
  if (r.clip > 0 && (v > r.clip || v < -r.clip)) {
    *live = 0;
    return std::clamp(v, -r.clip, r.clip);
  }
  *live = 1;
  return v;
}

// Runs direction d. Writes Y[t, d] (when y), the final H (and C) into h_out/c_out ([B, H]),
// the hidden sequence into hseq ([T, D, B, H], when set; see LSTMGradData for what it holds at
// times past a row's length) and, when tape is set, everything the gradient needs.
void run_direction(const Rnn& r, int64_t d, float* y, float* h_out, float* c_out, Tape* tape,
                   float* hseq = nullptr) {
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, G = r.gates, GH = G * H;
  const float* W = r.W + d * GH * I;
  const float* R = r.R + d * GH * H;
  const float* wb = r.bias ? r.bias + d * 2 * GH : nullptr;
  const float* rb = r.bias ? wb + GH : nullptr;
  std::vector<float> h(static_cast<size_t>(B * H), 0.0f), c(static_cast<size_t>(B * H), 0.0f);
  if (r.h0) std::copy(r.h0 + d * B * H, r.h0 + (d + 1) * B * H, h.begin());
  if (r.c0) std::copy(r.c0 + d * B * H, r.c0 + (d + 1) * B * H, c.begin());
  std::vector<float> xs(static_cast<size_t>(B * I)), gx(static_cast<size_t>(B * GH)),
      gh(static_cast<size_t>(B * GH));
  std::vector<uint8_t> live(static_cast<size_t>(B * GH), 1);
  if (tape) {
    tape->xs.assign(static_cast<size_t>(T * B * I), 0.0f);
    tape->hprev.assign(static_cast<size_t>(T * B * H), 0.0f);
    tape->act.assign(static_cast<size_t>(T * B * GH), 0.0f);
    tape->live.assign(static_cast<size_t>(T * B * GH), 1);
    if (r.lstm)
      tape->cprev.assign(static_cast<size_t>(T * B * H), 0.0f),
          tape->cell.assign(static_cast<size_t>(T * B * H), 0.0f);
    else if (r.cell == Cell::kGru)
      tape->lin.assign(static_cast<size_t>(T * B * H), 0.0f);
  }
  for (int64_t s = 0; s < T; ++s) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t t = r.time_of(d, s, b);
      float* dst = xs.data() + b * I;
      if (t < 0)
        std::fill(dst, dst + I, 0.0f);
      else
        std::copy(r.X + (t * B + b) * I, r.X + (t * B + b + 1) * I, dst);
    }
    // gx = Xs W^T, gh = H R^T (kept apart: GRU's linear_before_reset needs the h part alone)
    sgemm(false, true, B, GH, I, 1.0f, xs.data(), I, W, I, 0.0f, gx.data(), GH);
    sgemm(false, true, B, GH, H, 1.0f, h.data(), H, R, H, 0.0f, gh.data(), GH);
    if (tape) {
      std::copy(xs.begin(), xs.end(), tape->xs.begin() + s * B * I);
      std::copy(h.begin(), h.end(), tape->hprev.begin() + s * B * H);
      if (r.lstm) std::copy(c.begin(), c.end(), tape->cprev.begin() + s * B * H);
    }
    for (int64_t b = 0; b < B; ++b) {
      const int64_t t = r.time_of(d, s, b);
      if (t < 0) {
        // Past this row's length the state passes through unchanged. Steps s >= len are the
        // padding times s: the forward direction scans them after the sequence (they hold its
        // last state), the reverse direction before it (they hold the initial state).
        if (hseq) {
          float* dst = hseq + ((s * r.D + d) * B + b) * H;
          if (!r.reversed(d))
            std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, dst);
          else if (r.h0)
            std::copy(r.h0 + (d * B + b) * H, r.h0 + (d * B + b + 1) * H, dst);
          else
            std::fill(dst, dst + H, 0.0f);
        }
        continue;
      }
      float* a = (tape ? tape->act.data() + (s * B + b) * GH : gx.data() + b * GH);
      uint8_t* lv = tape ? tape->live.data() + (s * B + b) * GH : live.data() + b * GH;
      const float* px = gx.data() + b * GH;
      const float* ph = gh.data() + b * GH;
      float* hb = h.data() + b * H;
      float* cb = c.data() + b * H;
      if (r.lstm) {
        for (int64_t j = 0; j < GH; ++j) {
          float v = px[j] + ph[j] + (wb ? wb[j] + rb[j] : 0.0f);
          v = clip_value(r, v, &lv[j]);
          a[j] = j >= 3 * H ? std::tanh(v) : sigm(v);  // i, o, f: sigmoid; c: tanh
        }
        for (int64_t j = 0; j < H; ++j) {
          const float ig = a[j], og = a[H + j], fg = a[2 * H + j], cg = a[3 * H + j];
          cb[j] = fg * cb[j] + ig * cg;
          hb[j] = og * std::tanh(cb[j]);
        }
        if (tape) std::copy(cb, cb + H, tape->cell.begin() + (s * B + b) * H);
      } else if (r.cell == Cell::kRnn) {
        for (int64_t j = 0; j < H; ++j) {
          const float v = px[j] + ph[j] + (wb ? wb[j] + rb[j] : 0.0f);
          a[j] = std::tanh(clip_value(r, v, &lv[j]));
          hb[j] = a[j];
        }
      } else {
        float* lin = tape ? tape->lin.data() + (s * B + b) * H : nullptr;
        for (int64_t j = 0; j < 2 * H; ++j) {
          float v = px[j] + ph[j] + (wb ? wb[j] + rb[j] : 0.0f);
          a[j] = sigm(clip_value(r, v, &lv[j]));
        }
        std::vector<float> rh;
        if (!r.linear_before_reset) {
          // (r * Hp) Rh^T: one row times the h block of R.
          rh.assign(static_cast<size_t>(H), 0.0f);
          for (int64_t j = 0; j < H; ++j) rh[static_cast<size_t>(j)] = a[H + j] * hb[j];
          if (lin) std::copy(rh.begin(), rh.end(), lin);
        }
        std::vector<float> hh(static_cast<size_t>(H));
        if (!r.linear_before_reset)
          sgemm(false, true, 1, H, H, 1.0f, rh.data(), H, R + 2 * H * H, H, 0.0f, hh.data(), H);
        for (int64_t j = 0; j < H; ++j) {
          float v;
          const float wbh = wb ? wb[2 * H + j] : 0.0f, rbh = rb ? rb[2 * H + j] : 0.0f;
          if (r.linear_before_reset) {
            const float l = ph[2 * H + j] + rbh;
            if (lin) lin[j] = l;
            v = px[2 * H + j] + a[H + j] * l + wbh;
          } else {
            v = px[2 * H + j] + hh[static_cast<size_t>(j)] + rbh + wbh;
          }
          a[2 * H + j] = std::tanh(clip_value(r, v, &lv[2 * H + j]));
        }
        for (int64_t j = 0; j < H; ++j) {
          const float z = a[j], hn = a[2 * H + j];
          hb[j] = (1 - z) * hn + z * hb[j];
        }
      }
      if (y) std::copy(hb, hb + H, y + ((t * r.D + d) * B + b) * H);
      if (hseq) std::copy(hb, hb + H, hseq + ((t * r.D + d) * B + b) * H);
    }
  }
  if (h_out) std::copy(h.begin(), h.end(), h_out);
  if (c_out) std::copy(c.begin(), c.end(), c_out);
}

// LSTM, GRU, RNN: inputs X, W, R[, B][, sequence_lens][, initial_h][, initial_c (LSTM)]; outputs
// Y, Y_h[, Y_c (LSTM)], each optional.
void rnn_forward(const KernelContext& ctx, RnnCell cell) {
  RnnCall c;
  const Rnn r = from_call(ctx, cell, RnnOp::kForward, &c);
  for (int64_t d = 0; d < r.D; ++d)
    run_direction(r, d, c.y, c.yh ? c.yh + d * r.B * r.H : nullptr,
                  c.yc ? c.yc + d * r.B * r.H : nullptr, nullptr);
}

// What one backward pass reads (the output gradients, each optional: absent is zero) and writes
// (each optional; the caller zero-fills them).
struct RnnGrads {
  const float* dy = nullptr;   // [T, D, B, H]
  const float* dyh = nullptr;  // [D, B, H]
  const float* dyc = nullptr;  // [D, B, H] (LSTM)
  float* dx = nullptr;         // [T, B, I]
  float* dw = nullptr;         // [D, G*H, I]
  float* dr = nullptr;         // [D, G*H, H]
  float* db = nullptr;         // [D, 2*G*H]
  float* dh0 = nullptr;        // [D, B, H]
  float* dc0 = nullptr;        // [D, B, H] (LSTM)
  float* dgates = nullptr;     // [T, D, B, G*H]: gradients of the gate pre-activations, by time
  float* hseq = nullptr;       // [T, D, B, H]: the recomputed hidden sequence
};

// Back-propagation through time for every direction: re-runs the forward recurrence with a
// tape, then walks the steps backwards. Steps past a row's length pass the state gradient
// through unchanged and contribute nothing.
void rnn_backward(const Rnn& r, const RnnGrads& io) {
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, GH = r.gates * H, D = r.D;
  const bool lstm = r.cell == Cell::kLstm, gru = r.cell == Cell::kGru;
  std::vector<float> dh(static_cast<size_t>(B * H)), dc(static_cast<size_t>(B * H));
  std::vector<float> dg(static_cast<size_t>(B * GH)), tmp_h(static_cast<size_t>(B * H)),
      tmp_x(static_cast<size_t>(B * I));
  std::vector<float> dlin(static_cast<size_t>(B * H));
  for (int64_t d = 0; d < D; ++d) {
    Tape tape;
    run_direction(r, d, nullptr, nullptr, nullptr, &tape, io.hseq);
    const float* W = r.W + d * GH * I;
    const float* R = r.R + d * GH * H;
    std::fill(dh.begin(), dh.end(), 0.0f);
    std::fill(dc.begin(), dc.end(), 0.0f);
    if (io.dyh) std::copy(io.dyh + d * B * H, io.dyh + (d + 1) * B * H, dh.begin());
    if (io.dyc) std::copy(io.dyc + d * B * H, io.dyc + (d + 1) * B * H, dc.begin());
    for (int64_t s = T - 1; s >= 0; --s) {
      std::fill(dg.begin(), dg.end(), 0.0f);
      std::fill(dlin.begin(), dlin.end(), 0.0f);
      bool any = false;
      for (int64_t b = 0; b < B; ++b) {
        const int64_t t = r.time_of(d, s, b);
        if (t < 0) continue;
        any = true;
        float* dhb = dh.data() + b * H;
        if (io.dy)
          for (int64_t j = 0; j < H; ++j) dhb[j] += io.dy[((t * D + d) * B + b) * H + j];
        const float* a = tape.act.data() + (s * B + b) * GH;
        const uint8_t* lv = tape.live.data() + (s * B + b) * GH;
        const float* hp = tape.hprev.data() + (s * B + b) * H;
        float* g = dg.data() + b * GH;
        if (lstm) {
          const float* cp = tape.cprev.data() + (s * B + b) * H;
          const float* ct = tape.cell.data() + (s * B + b) * H;
          float* dcb = dc.data() + b * H;
          for (int64_t j = 0; j < H; ++j) {
            const float ig = a[j], og = a[H + j], fg = a[2 * H + j], cg = a[3 * H + j];
            const float tc = std::tanh(ct[j]);
            const float dct = dcb[j] + dhb[j] * og * (1 - tc * tc);
            g[j] = lv[j] ? dct * cg * ig * (1 - ig) : 0.0f;
            g[H + j] = lv[H + j] ? dhb[j] * tc * og * (1 - og) : 0.0f;
            g[2 * H + j] = lv[2 * H + j] ? dct * cp[j] * fg * (1 - fg) : 0.0f;
            g[3 * H + j] = lv[3 * H + j] ? dct * ig * (1 - cg * cg) : 0.0f;
            dcb[j] = dct * fg;  // carried to step s-1
          }
        } else if (!gru) {  // RNN: h = tanh(pre)
          for (int64_t j = 0; j < H; ++j) g[j] = lv[j] ? dhb[j] * (1 - a[j] * a[j]) : 0.0f;
        } else {
          const float* lin = tape.lin.data() + (s * B + b) * H;
          float* dl = dlin.data() + b * H;
          for (int64_t j = 0; j < H; ++j) {
            const float z = a[j], rg = a[H + j], hn = a[2 * H + j];
            const float dhn = dhb[j] * (1 - z);
            const float dhpre = lv[2 * H + j] ? dhn * (1 - hn * hn) : 0.0f;
            g[j] = lv[j] ? dhb[j] * (hp[j] - hn) * z * (1 - z) : 0.0f;
            g[2 * H + j] = dhpre;
            if (r.linear_before_reset) {
              dl[j] = dhpre * rg;  // d(Hp Rh^T + Rbh)
              g[H + j] = lv[H + j] ? dhpre * lin[j] * rg * (1 - rg) : 0.0f;
            } else {
              dl[j] = dhpre;  // d((r*Hp) Rh^T) w.r.t. its output; r's part needs Rh, below
            }
          }
        }
      }
      if (!any) continue;
      const float* xs = tape.xs.data() + s * B * I;
      const float* hps = tape.hprev.data() + s * B * H;
      if (gru && !r.linear_before_reset) {
        // u = r*Hp feeds Rh: du = dh_pre Rh; dr = du*Hp; dHp gets du*r (added below).
        sgemm(false, false, B, H, H, 1.0f, dlin.data(), H, R + 2 * H * H, H, 0.0f, tmp_h.data(), H);
        for (int64_t b = 0; b < B; ++b) {
          if (r.time_of(d, s, b) < 0) continue;
          const float* a = tape.act.data() + (s * B + b) * GH;
          const uint8_t* lv = tape.live.data() + (s * B + b) * GH;
          const float* hp = hps + b * H;
          for (int64_t j = 0; j < H; ++j) {
            const float rg = a[H + j];
            dg[static_cast<size_t>(b * GH + H + j)] =
                lv[H + j] ? tmp_h[static_cast<size_t>(b * H + j)] * hp[j] * rg * (1 - rg) : 0.0f;
          }
        }
      }
      if (io.dgates)
        for (int64_t b = 0; b < B; ++b) {
          const int64_t t = r.time_of(d, s, b);
          if (t < 0) continue;
          std::copy(dg.begin() + b * GH, dg.begin() + (b + 1) * GH,
                    io.dgates + ((t * D + d) * B + b) * GH);
        }
      // Parameter gradients: dW += dG^T Xs (every gate), dR += dG^T Hp (LSTM and RNN: all
      // gates; GRU: z and r here, the h block below with its own input).
      if (io.dw)
        sgemm(true, false, GH, I, B, 1.0f, dg.data(), GH, xs, I, 1.0f, io.dw + d * GH * I, I);
      const int64_t gr = gru ? 2 * H : GH;
      if (io.dr)
        sgemm(true, false, gr, H, B, 1.0f, dg.data(), GH, hps, H, 1.0f, io.dr + d * GH * H, H);
      if (gru && io.dr) {
        // h block: lbr=1 -> dlin^T Hp; lbr=0 -> dh_pre^T (r*Hp) (tape.lin holds r*Hp).
        const float* src = r.linear_before_reset ? hps : tape.lin.data() + s * B * H;
        sgemm(true, false, H, H, B, 1.0f, dlin.data(), H, src, H, 1.0f,
              io.dr + d * GH * H + 2 * H * H, H);
      }
      if (io.db) {
        float* wbg = io.db + d * 2 * GH;
        float* rbg = wbg + GH;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < GH; ++j) {
            const float v = dg[static_cast<size_t>(b * GH + j)];
            wbg[j] += v;
            // GRU's Rbh sits inside the reset product: its gradient is dlin, not dh_pre.
            rbg[j] += (gru && j >= 2 * H && r.linear_before_reset)
                          ? dlin[static_cast<size_t>(b * H + j - 2 * H)]
                          : v;
          }
      }
      if (io.dx) {
        sgemm(false, false, B, I, GH, 1.0f, dg.data(), GH, W, I, 0.0f, tmp_x.data(), I);
        for (int64_t b = 0; b < B; ++b) {
          const int64_t t = r.time_of(d, s, b);
          if (t < 0) continue;
          float* dst = io.dx + (t * B + b) * I;
          for (int64_t k = 0; k < I; ++k) dst[k] += tmp_x[static_cast<size_t>(b * I + k)];
        }
      }
      // dHp = dG R over the gates that read Hp directly, plus GRU's own terms.
      sgemm(false, false, B, H, gr, 1.0f, dg.data(), GH, R, H, 0.0f, tmp_h.data(), H);
      for (int64_t b = 0; b < B; ++b) {
        if (r.time_of(d, s, b) < 0) continue;  // invalid rows carry dh unchanged
        float* dhb = dh.data() + b * H;
        const float* th = tmp_h.data() + b * H;
        if (!gru) {
          for (int64_t j = 0; j < H; ++j) dhb[j] = th[j];
          continue;
        }
        const float* a = tape.act.data() + (s * B + b) * GH;
        std::vector<float> extra(static_cast<size_t>(H), 0.0f);
        if (r.linear_before_reset) {
          // dlin Rh
          sgemm(false, false, 1, H, H, 1.0f, dlin.data() + b * H, H, R + 2 * H * H, H, 0.0f,
                extra.data(), H);
        } else {
          // du * r, with du = dh_pre Rh
          std::vector<float> du(static_cast<size_t>(H));
          sgemm(false, false, 1, H, H, 1.0f, dlin.data() + b * H, H, R + 2 * H * H, H, 0.0f,
                du.data(), H);
          for (int64_t j = 0; j < H; ++j)
            extra[static_cast<size_t>(j)] = du[static_cast<size_t>(j)] * a[H + j];
        }
        for (int64_t j = 0; j < H; ++j)
          dhb[j] = dhb[j] * a[j] + th[j] + extra[static_cast<size_t>(j)];
      }
    }
    if (io.dh0) std::copy(dh.begin(), dh.end(), io.dh0 + d * B * H);
    if (io.dc0) std::copy(dc.begin(), dc.end(), io.dc0 + d * B * H);
  }
}

// GRUGrad / RNNGrad: inputs X, W, R, B, sequence_lens, initial_h, dY, dY_h; outputs one
// gradient per forward input (none for sequence_lens), each optional.
void fused_backward(const KernelContext& ctx, RnnCell cell) {
  RnnCall c;
  const Rnn r = from_call(ctx, cell, RnnOp::kFusedGrad, &c);
  RnnGrads io;
  io.dy = c.dy, io.dyh = c.dyh;
  io.dx = c.dx, io.dw = c.dw, io.dr = c.dr, io.db = c.db, io.dh0 = c.dh0;
  rnn_backward(r, io);
}

}  // namespace

void lstm(const KernelContext& ctx) {
  rnn_forward(ctx, RnnCell::kLstm);
}
void gru(const KernelContext& ctx) {
  rnn_forward(ctx, RnnCell::kGru);
}
void rnn(const KernelContext& ctx) {
  rnn_forward(ctx, RnnCell::kRnn);
}

void lstm_grad_data(const KernelContext& ctx) {
  RnnCall c;
  const Rnn r = from_call(ctx, RnnCell::kLstm, RnnOp::kLstmGradData, &c);
  RnnGrads io;
  io.dy = c.dy, io.dyh = c.dyh, io.dyc = c.dyc;
  io.dx = c.dx, io.dh0 = c.dh0, io.dc0 = c.dc0, io.dgates = c.dgates, io.hseq = c.hseq;
  rnn_backward(r, io);
}

void lstm_grad_weights(const KernelContext& ctx) {
  // Inputs X [T, B, I], H [T, D, B, H], initial_h [D, B, H] (optional: zero), dGates
  // [T, D, B, 4H]; outputs dW [D, 4H, I], dR [D, 4H, H], dB [D, 8H], each optional:
  //   dW_d = sum_t dG[t, d]^T X[t],   dR_d = sum_t dG[t, d]^T Hprev_d(t),
  //   dB_d = [sum dG, sum dG] (Wb and Rb alike),
  // Hprev_d(t) = H[t-1, d] (forward) or H[t+1, d] (reverse), initial_h at the first step.
  // Times ascend in every sum; each is one sgemm over the batch per time step.
  const LstmWeightsCall c = parse_lstm_grad_weights(ctx);
  const int64_t T = c.r.T, B = c.r.B, I = c.r.I, H = c.r.H, D = c.r.D, GH = 4 * H;
  const float *h0 = c.h0, *xp = c.X, *hp = c.Hs, *dg = c.dG;
  float *dw = c.dw, *dr = c.dr, *db = c.db;
  for (float* o : {dw, dr, db})
    if (o) std::fill(o, o + (o == dw ? D * GH * I : o == dr ? D * GH * H : D * 2 * GH), 0.0f);
  for (int64_t d = 0; d < D; ++d) {
    const bool reversed = c.r.reverse || d == 1;
    for (int64_t t = 0; t < T; ++t) {
      const float* g = dg + (t * D + d) * B * GH;  // [B, 4H]
      if (dw)
        sgemm(true, false, GH, I, B, 1.0f, g, GH, xp + t * B * I, I, 1.0f, dw + d * GH * I, I);
      if (dr) {
        const int64_t prev = reversed ? t + 1 : t - 1;
        const float* hprev = prev >= 0 && prev < T ? hp + (prev * D + d) * B * H
                             : h0                  ? h0 + d * B * H
                                                   : nullptr;  // zero: no contribution
        if (hprev) sgemm(true, false, GH, H, B, 1.0f, g, GH, hprev, H, 1.0f, dr + d * GH * H, H);
      }
      if (db) {
        float* wbg = db + d * 2 * GH;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < GH; ++j) wbg[j] += g[b * GH + j];
      }
    }
    if (db) std::copy(db + d * 2 * GH, db + d * 2 * GH + GH, db + d * 2 * GH + GH);
  }
}

void gru_grad(const KernelContext& ctx) {
  fused_backward(ctx, RnnCell::kGru);
}
void rnn_grad(const KernelContext& ctx) {
  fused_backward(ctx, RnnCell::kRnn);
}

}  // namespace rnn_reference
