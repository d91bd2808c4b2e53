// An independent reference of ONNX's LSTM, GRU and RNN and the runtime's gradient operators,
// written as the definitions read (one row and one step at a time, per-step BLAS calls), for
// tests/runtime/rnn_program_test.cpp to hold the runtime's kernels (rnn_program.h, the code
// both backends run) against. Forward and reverse directions, sequence lengths, clip, GRU
// linear_before_reset.
#include <algorithm>
#include <cmath>

#include "rnn_reference.h"

#include "../../runtime_stub/src/kernel_util.h"

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

// Reads the forward inputs (X, W, R, B, sequence_lens, initial_h[, initial_c]) starting at
// `first` and the attributes; fails on what this runtime does not support.
Rnn parse_rnn(const KernelContext& ctx, Cell cell, size_t first = 0) {
  Rnn r;
  const bool lstm = cell == Cell::kLstm;
  r.cell = cell;
  r.lstm = lstm;
  r.gates = lstm ? 4 : cell == Cell::kGru ? 3 : 1;
  const Tensor& x = ctx.in(first);
  const Tensor& w = ctx.in(first + 1);
  const Tensor& rr = ctx.in(first + 2);
  for (const Tensor* t : {&x, &w, &rr}) ctx.expect_dtype(*t, DType::kFloat32, "X, W and R");
  if (ctx.attr_int("layout", 0) != 0) ctx.fail("layout=1 is not supported");
  if (lstm && ctx.attr_int("input_forget", 0) != 0) ctx.fail("input_forget=1 is not supported");
  std::string dir = ctx.attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    ctx.fail("unknown direction \"" + dir + "\"");
  r.bidirectional = dir == "bidirectional";
  r.reverse = dir == "reverse";
  r.D = r.bidirectional ? 2 : 1;
  if (ctx.has_attr("activations")) {
    auto it = ctx.attrs.find("activations");
    const auto* acts = std::get_if<std::vector<std::string>>(&it->second);
    std::vector<std::string> dflt = lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                    : cell == Cell::kGru
                                        ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                        : std::vector<std::string>{"Tanh"};
    bool ok = acts && acts->size() == dflt.size() * static_cast<size_t>(r.D);
    for (size_t i = 0; ok && i < acts->size(); ++i) ok = (*acts)[i] == dflt[i % dflt.size()];
    if (!ok) ctx.fail("only the default activations are supported");
  }
  r.clip = static_cast<float>(ctx.attr_float("clip", 0.0));
  if (r.clip < 0) ctx.fail("clip must be positive");
  r.linear_before_reset = cell == Cell::kGru && ctx.attr_int("linear_before_reset", 0) != 0;
  if (x.rank() != 3 || w.rank() != 3 || rr.rank() != 3) ctx.fail("X, W and R must have rank 3");
  r.T = x.shape[0];
  r.B = x.shape[1];
  r.I = x.shape[2];
  r.H = ctx.attr_int("hidden_size", rr.shape[2]);
  const int64_t gh = r.gates * r.H;
  if (w.shape != Shape{r.D, gh, r.I})
    ctx.fail("W has shape " + shape_to_string(w.shape) + ", expected " +
             shape_to_string({r.D, gh, r.I}));
  if (rr.shape != Shape{r.D, gh, r.H})
    ctx.fail("R has shape " + shape_to_string(rr.shape) + ", expected " +
             shape_to_string({r.D, gh, r.H}));
  r.X = x.as<float>();
  r.W = w.as<float>();
  r.R = rr.as<float>();
  if (ctx.has_in(first + 3)) {
    const Tensor& b = ctx.in(first + 3);
    ctx.expect_dtype(b, DType::kFloat32, "B");
    if (b.shape != Shape{r.D, 2 * gh})
      ctx.fail("B has shape " + shape_to_string(b.shape) + ", expected " +
               shape_to_string({r.D, 2 * gh}));
    r.bias = b.as<float>();
  }
  r.lens.assign(static_cast<size_t>(r.B), r.T);
  if (ctx.has_in(first + 4)) {
    std::vector<int64_t> l = ctx.ints_of(ctx.in(first + 4), "sequence_lens");
    if (static_cast<int64_t>(l.size()) != r.B)
      ctx.fail("sequence_lens must have " + std::to_string(r.B) + " entries");
    for (int64_t v : l)
      if (v < 0 || v > r.T)
        ctx.fail("sequence length " + std::to_string(v) + " is outside [0, " + std::to_string(r.T) +
                 "]");
    r.lens = l;
  }
  const Shape state = {r.D, r.B, r.H};
  for (size_t k = 5; k <= (lstm ? 6u : 5u); ++k) {
    if (!ctx.has_in(first + k)) continue;
    const Tensor& t = ctx.in(first + k);
    ctx.expect_dtype(t, DType::kFloat32, k == 5 ? "initial_h" : "initial_c");
    if (t.shape != state)
      ctx.fail(std::string(k == 5 ? "initial_h" : "initial_c") + " has shape " +
               shape_to_string(t.shape) + ", expected " + shape_to_string(state));
    (k == 5 ? r.h0 : r.c0) = t.as<float>();
  }
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
void rnn_forward(const KernelContext& ctx, Cell cell) {
  Rnn r = parse_rnn(ctx, cell);
  if (cell == Cell::kLstm && ctx.has_in(7)) ctx.fail("peephole weights P are not supported");
  if (cell != Cell::kLstm && ctx.has_in(6)) ctx.fail("takes at most 6 inputs");
  float* y = nullptr;
  float* yh = nullptr;
  float* yc = nullptr;
  if (ctx.has_out(0)) {
    ctx.expect_out(0, DType::kFloat32, {r.T, r.D, r.B, r.H});
    y = ctx.out(0).as<float>();
    std::fill(y, y + ctx.out(0).numel(), 0.0f);  // steps past a sequence's length stay zero
  }
  if (ctx.has_out(1))
    ctx.expect_out(1, DType::kFloat32, {r.D, r.B, r.H}), yh = ctx.out(1).as<float>();
  if (cell == Cell::kLstm && ctx.has_out(2))
    ctx.expect_out(2, DType::kFloat32, {r.D, r.B, r.H}), yc = ctx.out(2).as<float>();
  for (int64_t d = 0; d < r.D; ++d)
    run_direction(r, d, y, yh ? yh + d * r.B * r.H : nullptr, yc ? yc + d * r.B * r.H : nullptr,
                  nullptr);
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

// The optional output-gradient input k: null when absent, else checked against `s`.
const float* grad_input(const KernelContext& ctx, size_t k, const Shape& s, const char* what) {
  if (!ctx.has_in(k)) return nullptr;
  const Tensor& t = ctx.in(k);
  ctx.expect_dtype(t, DType::kFloat32, what);
  if (t.shape != s)
    ctx.fail(std::string(what) + " has shape " + shape_to_string(t.shape) + ", expected " +
             shape_to_string(s));
  return t.as<float>();
}

// The optional output k: null when absent, else checked against `s` and zero-filled.
float* grad_output(const KernelContext& ctx, size_t k, const Shape& s) {
  if (!ctx.has_out(k)) return nullptr;
  ctx.expect_out(k, DType::kFloat32, s);
  float* p = ctx.out(k).as<float>();
  std::fill(p, p + num_elements(s), 0.0f);
  return p;
}

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

// GRUGrad / RNNGrad: inputs X, W, R, B, sequence_lens, initial_h (absent ones as absent
// tensors), dY, dY_h; outputs one gradient per forward input (dX, dW, dR, dB, none for
// sequence_lens, d initial_h), each optional.
void fused_backward(const KernelContext& ctx, Cell cell) {
  if (ctx.inputs.size() > 8)
    ctx.fail("takes at most 8 inputs (X, W, R, B, sequence_lens, initial_h, dY, dY_h), got " +
             std::to_string(ctx.inputs.size()));
  if (ctx.outputs.size() > 6) ctx.fail("has at most 6 outputs, one per forward input");
  const Rnn r = parse_rnn(ctx, cell);
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, GH = r.gates * H, D = r.D;
  if (ctx.has_out(4)) ctx.fail("sequence_lens has no gradient (output 4 must be absent)");
  RnnGrads io;
  io.dy = grad_input(ctx, 6, {T, D, B, H}, "dY");
  io.dyh = grad_input(ctx, 7, {D, B, H}, "dY_h");
  io.dx = grad_output(ctx, 0, {T, B, I});
  io.dw = grad_output(ctx, 1, {D, GH, I});
  io.dr = grad_output(ctx, 2, {D, GH, H});
  io.db = grad_output(ctx, 3, {D, 2 * GH});
  io.dh0 = grad_output(ctx, 5, {D, B, H});
  rnn_backward(r, io);
}

}  // namespace

void lstm(const KernelContext& ctx) {
  rnn_forward(ctx, Cell::kLstm);
}
void gru(const KernelContext& ctx) {
  rnn_forward(ctx, Cell::kGru);
}
void rnn(const KernelContext& ctx) {
  rnn_forward(ctx, Cell::kRnn);
}

void lstm_grad_data(const KernelContext& ctx) {
  // Inputs X, W, R, B, sequence_lens, initial_h, initial_c, dY, dY_h, dY_c (B onwards optional;
  // an absent output gradient is zero). Outputs dX, d initial_h, d initial_c, dGates
  // [T, D, B, 4H], H [T, D, B, H], each optional.
  if (ctx.inputs.size() > 10)
    ctx.fail(
        "takes at most 10 inputs (X, W, R, B, sequence_lens, initial_h, initial_c, dY, "
        "dY_h, dY_c), got " +
        std::to_string(ctx.inputs.size()));
  if (ctx.outputs.size() > 5)
    ctx.fail("has at most 5 outputs (dX, d initial_h, d initial_c, dGates, H)");
  const Rnn r = parse_rnn(ctx, Cell::kLstm);
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, D = r.D;
  RnnGrads io;
  io.dy = grad_input(ctx, 7, {T, D, B, H}, "dY");
  io.dyh = grad_input(ctx, 8, {D, B, H}, "dY_h");
  io.dyc = grad_input(ctx, 9, {D, B, H}, "dY_c");
  io.dx = grad_output(ctx, 0, {T, B, I});
  io.dh0 = grad_output(ctx, 1, {D, B, H});
  io.dc0 = grad_output(ctx, 2, {D, B, H});
  io.dgates = grad_output(ctx, 3, {T, D, B, 4 * H});
  io.hseq = grad_output(ctx, 4, {T, D, B, H});
  rnn_backward(r, io);
}

void lstm_grad_weights(const KernelContext& ctx) {
  // Inputs X [T, B, I], H [T, D, B, H], initial_h [D, B, H] (optional: zero), dGates
  // [T, D, B, 4H]; outputs dW [D, 4H, I], dR [D, 4H, H], dB [D, 8H], each optional:
  //   dW_d = sum_t dG[t, d]^T X[t],   dR_d = sum_t dG[t, d]^T Hprev_d(t),
  //   dB_d = [sum dG, sum dG] (Wb and Rb alike),
  // Hprev_d(t) = H[t-1, d] (forward) or H[t+1, d] (reverse), initial_h at the first step.
  // Times ascend in every sum; each is one sgemm over the batch per time step.
  ctx.expect_arity(4, 3, "(X, H, initial_h, dGates) -> (dW, dR, dB)");
  const Tensor& x = ctx.in(0);
  const Tensor& hs = ctx.in(1);
  const Tensor& dgt = ctx.in(3);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  ctx.expect_dtype(hs, DType::kFloat32, "H");
  ctx.expect_dtype(dgt, DType::kFloat32, "dGates");
  if (ctx.attr_int("layout", 0) != 0) ctx.fail("layout=1 is not supported");
  const std::string dir = ctx.attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    ctx.fail("unknown direction \"" + dir + "\"");
  const int64_t D = dir == "bidirectional" ? 2 : 1;
  if (x.rank() != 3) ctx.fail("X has shape " + shape_to_string(x.shape) + ", expected rank 3");
  if (hs.rank() != 4) ctx.fail("H has shape " + shape_to_string(hs.shape) + ", expected rank 4");
  const int64_t T = x.shape[0], B = x.shape[1], I = x.shape[2], H = hs.shape[3], GH = 4 * H;
  if (ctx.has_attr("hidden_size") && ctx.attr_int("hidden_size", H) != H)
    ctx.fail("H has shape " + shape_to_string(hs.shape) + ", expected hidden size " +
             std::to_string(ctx.attr_int("hidden_size", H)));
  if (hs.shape != Shape{T, D, B, H})
    ctx.fail("H has shape " + shape_to_string(hs.shape) + ", expected " +
             shape_to_string({T, D, B, H}));
  if (dgt.shape != Shape{T, D, B, GH})
    ctx.fail("dGates has shape " + shape_to_string(dgt.shape) + ", expected " +
             shape_to_string({T, D, B, GH}));
  const float* h0 = grad_input(ctx, 2, {D, B, H}, "initial_h");
  float* dw = grad_output(ctx, 0, {D, GH, I});
  float* dr = grad_output(ctx, 1, {D, GH, H});
  float* db = grad_output(ctx, 2, {D, 2 * GH});
  const float* xp = x.as<float>();
  const float* hp = hs.as<float>();
  const float* dg = dgt.as<float>();
  for (int64_t d = 0; d < D; ++d) {
    const bool reversed = dir == "reverse" || d == 1;
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
  fused_backward(ctx, Cell::kGru);
}
void rnn_grad(const KernelContext& ctx) {
  fused_backward(ctx, Cell::kRnn);
}

}  // namespace rnn_reference
