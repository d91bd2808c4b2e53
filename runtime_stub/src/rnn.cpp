// LSTM and GRU (ONNX layouts: LSTM gates i,o,f,c; GRU gates z,r,h; forward, reverse and
// bidirectional; optional B, sequence_lens, initial_h, initial_c; clip; GRU
// linear_before_reset) and their gradients LSTMGrad and GRUGrad, which re-run the forward
// recurrence to recover the gate values and then walk the steps backwards.
#include <algorithm>
#include <cmath>

#include "kernel_util.h"

namespace planner::rt::kernels {

namespace {

float sigm(float x) {
  return x >= 0 ? 1.0f / (1.0f + std::exp(-x)) : std::exp(x) / (1.0f + std::exp(x));
}

struct Rnn {
  bool lstm = true;
  int64_t gates = 4;  // 4 (LSTM) or 3 (GRU)
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
Rnn parse_rnn(const KernelContext& ctx, bool lstm, size_t first = 0) {
  Rnn r;
  r.lstm = lstm;
  r.gates = lstm ? 4 : 3;
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
                                         : std::vector<std::string>{"Sigmoid", "Tanh"};
    bool ok = acts && acts->size() == dflt.size() * static_cast<size_t>(r.D);
    for (size_t i = 0; ok && i < acts->size(); ++i) ok = (*acts)[i] == dflt[i % dflt.size()];
    if (!ok) ctx.fail("only the default activations are supported");
  }
  r.clip = static_cast<float>(ctx.attr_float("clip", 0.0));
  if (r.clip < 0) ctx.fail("clip must be positive");
  r.linear_before_reset = !lstm && ctx.attr_int("linear_before_reset", 0) != 0;
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

// Runs direction d. Writes Y[t, d] (when y), the final H (and C) into h_out/c_out ([B, H])
// and, when tape is set, everything the gradient needs.
void run_direction(const Rnn& r, int64_t d, float* y, float* h_out, float* c_out, Tape* tape) {
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
    else
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
      if (t < 0) continue;  // past this row's length: the state passes through unchanged
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
    }
  }
  if (h_out) std::copy(h.begin(), h.end(), h_out);
  if (c_out) std::copy(c.begin(), c.end(), c_out);
}

void rnn_forward(const KernelContext& ctx, bool lstm) {
  Rnn r = parse_rnn(ctx, lstm);
  if (lstm && ctx.has_in(7)) ctx.fail("peephole weights P are not supported");
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
  if (lstm && ctx.has_out(2))
    ctx.expect_out(2, DType::kFloat32, {r.D, r.B, r.H}), yc = ctx.out(2).as<float>();
  for (int64_t d = 0; d < r.D; ++d)
    run_direction(r, d, y, yh ? yh + d * r.B * r.H : nullptr, yc ? yc + d * r.B * r.H : nullptr,
                  nullptr);
}

// Inputs: the forward inputs padded to 7 (LSTM) or 6 (GRU), then the forward outputs, then
// their gradients (one per output, absent when no gradient reached it). Outputs: one gradient
// per forward input (dX, dW, dR, dB, -, d initial_h, d initial_c), each optional.
void rnn_backward(const KernelContext& ctx, bool lstm) {
  const size_t n_fwd_in = lstm ? 7 : 6;
  if (ctx.inputs.size() < n_fwd_in || (ctx.inputs.size() - n_fwd_in) % 2 != 0)
    ctx.fail("expected " + std::to_string(n_fwd_in) +
             " forward inputs, then the forward outputs and one gradient each" +
             (lstm ? " (peephole weights P are not supported)" : ""));
  const size_t n_out = (ctx.inputs.size() - n_fwd_in) / 2;
  const size_t first_dy = n_fwd_in + n_out;
  Rnn r = parse_rnn(ctx, lstm);
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, G = r.gates, GH = G * H, D = r.D;
  auto grad_in = [&](size_t k, const Shape& s, const char* what) -> const float* {
    if (k >= n_out || !ctx.has_in(first_dy + k)) return nullptr;
    const Tensor& t = ctx.in(first_dy + k);
    ctx.expect_dtype(t, DType::kFloat32, what);
    if (t.shape != s)
      ctx.fail(std::string(what) + " has shape " + shape_to_string(t.shape) + ", expected " +
               shape_to_string(s));
    return t.as<float>();
  };
  const float* dy = grad_in(0, {T, D, B, H}, "dY");
  const float* dyh = grad_in(1, {D, B, H}, "dY_h");
  const float* dyc = lstm ? grad_in(2, {D, B, H}, "dY_c") : nullptr;
  auto grad_out = [&](size_t k, const Shape& s) -> float* {
    if (!ctx.has_out(k)) return nullptr;
    ctx.expect_out(k, DType::kFloat32, s);
    float* p = ctx.out(k).as<float>();
    std::fill(p, p + num_elements(s), 0.0f);
    return p;
  };
  float* dx = grad_out(0, {T, B, I});
  float* dw = grad_out(1, {D, GH, I});
  float* dr = grad_out(2, {D, GH, H});
  float* db = grad_out(3, {D, 2 * GH});
  if (ctx.has_out(4)) ctx.fail("sequence_lens has no gradient");
  float* dh0 = grad_out(5, {D, B, H});
  float* dc0 = lstm ? grad_out(6, {D, B, H}) : nullptr;

  std::vector<float> dh(static_cast<size_t>(B * H)), dc(static_cast<size_t>(B * H));
  std::vector<float> dg(static_cast<size_t>(B * GH)), tmp_h(static_cast<size_t>(B * H)),
      tmp_x(static_cast<size_t>(B * I));
  std::vector<float> dlin(static_cast<size_t>(B * H));
  for (int64_t d = 0; d < D; ++d) {
    Tape tape;
    run_direction(r, d, nullptr, nullptr, nullptr, &tape);
    const float* W = r.W + d * GH * I;
    const float* R = r.R + d * GH * H;
    std::fill(dh.begin(), dh.end(), 0.0f);
    std::fill(dc.begin(), dc.end(), 0.0f);
    if (dyh) std::copy(dyh + d * B * H, dyh + (d + 1) * B * H, dh.begin());
    if (dyc) std::copy(dyc + d * B * H, dyc + (d + 1) * B * H, dc.begin());
    for (int64_t s = T - 1; s >= 0; --s) {
      std::fill(dg.begin(), dg.end(), 0.0f);
      std::fill(dlin.begin(), dlin.end(), 0.0f);
      bool any = false;
      for (int64_t b = 0; b < B; ++b) {
        const int64_t t = r.time_of(d, s, b);
        if (t < 0) continue;
        any = true;
        float* dhb = dh.data() + b * H;
        if (dy)
          for (int64_t j = 0; j < H; ++j) dhb[j] += dy[((t * D + d) * B + b) * H + j];
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
      if (!lstm && !r.linear_before_reset) {
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
      // Parameter gradients: dW += dG^T Xs (every gate), dR += dG^T Hp (LSTM: all gates; GRU:
      // z and r here, the h block below with its own input).
      if (dw) sgemm(true, false, GH, I, B, 1.0f, dg.data(), GH, xs, I, 1.0f, dw + d * GH * I, I);
      const int64_t gr = lstm ? GH : 2 * H;
      if (dr) sgemm(true, false, gr, H, B, 1.0f, dg.data(), GH, hps, H, 1.0f, dr + d * GH * H, H);
      if (!lstm && dr) {
        // h block: lbr=1 -> dlin^T Hp; lbr=0 -> dh_pre^T (r*Hp) (tape.lin holds r*Hp).
        const float* src = r.linear_before_reset ? hps : tape.lin.data() + s * B * H;
        sgemm(true, false, H, H, B, 1.0f, dlin.data(), H, src, H, 1.0f, dr + d * GH * H + 2 * H * H,
              H);
      }
      if (db) {
        float* wbg = db + d * 2 * GH;
        float* rbg = wbg + GH;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < GH; ++j) {
            const float v = dg[static_cast<size_t>(b * GH + j)];
            wbg[j] += v;
            // GRU's Rbh sits inside the reset product: its gradient is dlin, not dh_pre.
            rbg[j] += (!lstm && j >= 2 * H && r.linear_before_reset)
                          ? dlin[static_cast<size_t>(b * H + j - 2 * H)]
                          : v;
          }
      }
      if (dx) {
        sgemm(false, false, B, I, GH, 1.0f, dg.data(), GH, W, I, 0.0f, tmp_x.data(), I);
        for (int64_t b = 0; b < B; ++b) {
          const int64_t t = r.time_of(d, s, b);
          if (t < 0) continue;
          float* dst = dx + (t * B + b) * I;
          for (int64_t k = 0; k < I; ++k) dst[k] += tmp_x[static_cast<size_t>(b * I + k)];
        }
      }
      // dHp = dG R over the gates that read Hp directly, plus GRU's own terms.
      sgemm(false, false, B, H, gr, 1.0f, dg.data(), GH, R, H, 0.0f, tmp_h.data(), H);
      for (int64_t b = 0; b < B; ++b) {
        if (r.time_of(d, s, b) < 0) continue;  // invalid rows carry dh unchanged
        float* dhb = dh.data() + b * H;
        const float* th = tmp_h.data() + b * H;
        if (lstm) {
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
    if (dh0) std::copy(dh.begin(), dh.end(), dh0 + d * B * H);
    if (dc0) std::copy(dc.begin(), dc.end(), dc0 + d * B * H);
  }
}

}  // namespace

void k_lstm(const KernelContext& ctx) {
  rnn_forward(ctx, true);
}
void k_gru(const KernelContext& ctx) {
  rnn_forward(ctx, false);
}
void k_lstm_grad(const KernelContext& ctx) {
  rnn_backward(ctx, true);
}
void k_gru_grad(const KernelContext& ctx) {
  rnn_backward(ctx, false);
}

}  // namespace planner::rt::kernels
