// LSTM, GRU and RNN (ONNX layouts: LSTM gates i,o,f,c; GRU gates z,r,h; RNN one tanh gate;
// forward, reverse and bidirectional; optional B, sequence_lens, initial_h, initial_c; clip; GRU
// linear_before_reset) and their gradients: LSTMGradData + LSTMGradWeights (cuDNN's split of
// the LSTM backward pass), and the fused GRUGrad and RNNGrad. The calls are checked here and
// run by rnn_program.h, on the host with BLAS in this backend and on the device in the cuda
// one; the data gradients re-run the forward recurrence to recover the gate values.
#include "rnn.h"

#include <cstring>
#include <vector>

namespace planner::rt::kernels {

namespace {

// The attributes and forward inputs (X, W, R, B, sequence_lens, initial_h[, initial_c]) from
// input 0; fails on what this runtime does not support.
RnnDims parse_dims(const KernelContext& ctx, RnnCell cell, RnnCall& call, bool host_lens) {
  RnnDims r;
  const bool lstm = cell == RnnCell::kLstm;
  r.cell = cell;
  r.G = lstm ? 4 : cell == RnnCell::kGru ? 3 : 1;
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  const Tensor& rr = ctx.in(2);
  for (const Tensor* t : {&x, &w, &rr}) ctx.expect_dtype(*t, DType::kFloat32, "X, W and R");
  if (ctx.attr_int("layout", 0) != 0) ctx.fail("layout=1 is not supported");
  if (lstm && ctx.attr_int("input_forget", 0) != 0) ctx.fail("input_forget=1 is not supported");
  const std::string dir = ctx.attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    ctx.fail("unknown direction \"" + dir + "\"");
  r.bidirectional = dir == "bidirectional";
  r.reverse = dir == "reverse";
  r.D = r.bidirectional ? 2 : 1;
  if (ctx.has_attr("activations")) {
    auto it = ctx.attrs.find("activations");
    const auto* acts = std::get_if<std::vector<std::string>>(&it->second);
    const std::vector<std::string> dflt = lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                          : cell == RnnCell::kGru
                                              ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                              : std::vector<std::string>{"Tanh"};
    bool ok = acts && acts->size() == dflt.size() * static_cast<size_t>(r.D);
    for (size_t i = 0; ok && i < acts->size(); ++i) ok = (*acts)[i] == dflt[i % dflt.size()];
    if (!ok) ctx.fail("only the default activations are supported");
  }
  r.clip = static_cast<float>(ctx.attr_float("clip", 0.0));
  if (r.clip < 0) ctx.fail("clip must be positive");
  r.lbr = cell == RnnCell::kGru && ctx.attr_int("linear_before_reset", 0) != 0;
  if (x.rank() != 3 || w.rank() != 3 || rr.rank() != 3) ctx.fail("X, W and R must have rank 3");
  r.T = x.shape[0];
  r.B = x.shape[1];
  r.I = x.shape[2];
  r.H = ctx.attr_int("hidden_size", rr.shape[2]);
  const int64_t gh = r.G * r.H;
  if (w.shape != Shape{r.D, gh, r.I})
    ctx.fail("W has shape " + shape_to_string(w.shape) + ", expected " +
             shape_to_string({r.D, gh, r.I}));
  if (rr.shape != Shape{r.D, gh, r.H})
    ctx.fail("R has shape " + shape_to_string(rr.shape) + ", expected " +
             shape_to_string({r.D, gh, r.H}));
  call.X = x.as<float>();
  call.W = w.as<float>();
  call.R = rr.as<float>();
  if (ctx.has_in(3)) {
    const Tensor& b = ctx.in(3);
    ctx.expect_dtype(b, DType::kFloat32, "B");
    if (b.shape != Shape{r.D, 2 * gh})
      ctx.fail("B has shape " + shape_to_string(b.shape) + ", expected " +
               shape_to_string({r.D, 2 * gh}));
    call.bias = b.as<float>();
  }
  if (ctx.has_in(4)) {
    const Tensor& l = ctx.in(4);
    if (l.dtype != DType::kInt32 && l.dtype != DType::kInt64)
      ctx.fail("sequence_lens must be int32 or int64");
    if (l.numel() != r.B) ctx.fail("sequence_lens must have " + std::to_string(r.B) + " entries");
    if (host_lens)
      for (int64_t v : ctx.ints_of(l, "sequence_lens"))
        if (v < 0 || v > r.T)
          ctx.fail("sequence length " + std::to_string(v) + " is outside [0, " +
                   std::to_string(r.T) + "]");
    if (l.dtype == DType::kInt32)
      r.lens32 = l.as<int32_t>();
    else
      r.lens64 = l.as<int64_t>();
  }
  const Shape state = {r.D, r.B, r.H};
  for (size_t k = 5; k <= (lstm ? 6u : 5u); ++k) {
    if (!ctx.has_in(k)) continue;
    const Tensor& t = ctx.in(k);
    ctx.expect_dtype(t, DType::kFloat32, k == 5 ? "initial_h" : "initial_c");
    if (t.shape != state)
      ctx.fail(std::string(k == 5 ? "initial_h" : "initial_c") + " has shape " +
               shape_to_string(t.shape) + ", expected " + shape_to_string(state));
    (k == 5 ? call.h0 : call.c0) = t.as<float>();
  }
  return r;
}

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

// The optional output k: null when absent, else checked against `s`.
float* output(const KernelContext& ctx, size_t k, const Shape& s) {
  if (!ctx.has_out(k)) return nullptr;
  ctx.expect_out(k, DType::kFloat32, s);
  return ctx.out(k).as<float>();
}

// The backend of this file: host memory, BLAS, one loop per element kernel.
struct HostDevice {
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void run(RnnKernel k, const RnnStep& p, int64_t n) {
    for (int64_t e = 0; e < n; ++e) rnn_element(k, p, e);
  }
  void copy(float* dst, const float* src, int64_t n) {
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * 4);
  }
  void zero(void* dst, int64_t bytes) {
    if (bytes > 0) std::memset(dst, 0, static_cast<size_t>(bytes));
  }
};

void run_host(const KernelContext& ctx, RnnCell cell, RnnOp op) {
  RnnCall call = parse_rnn_call(ctx, cell, op, true);
  std::vector<float> ws(static_cast<size_t>(rnn_workspace_floats(call.r, rnn_backward(op))));
  call.ws = ws.data();
  HostDevice dev;
  if (rnn_backward(op))
    rnn_backward_program(dev, call);
  else
    rnn_forward_program(dev, call);
}

}  // namespace

RnnCall parse_rnn_call(const KernelContext& ctx, RnnCell cell, RnnOp op, bool host_lens) {
  RnnCall c;
  const bool lstm = cell == RnnCell::kLstm;
  if (op == RnnOp::kForward) {
    if (lstm && ctx.has_in(7)) ctx.fail("peephole weights P are not supported");
    if (!lstm && ctx.has_in(6)) ctx.fail("takes at most 6 inputs");
  } else if (op == RnnOp::kFusedGrad) {
    if (ctx.inputs.size() > 8)
      ctx.fail("takes at most 8 inputs (X, W, R, B, sequence_lens, initial_h, dY, dY_h), got " +
               std::to_string(ctx.inputs.size()));
    if (ctx.outputs.size() > 6) ctx.fail("has at most 6 outputs, one per forward input");
  } else {
    if (ctx.inputs.size() > 10)
      ctx.fail(
          "takes at most 10 inputs (X, W, R, B, sequence_lens, initial_h, initial_c, dY, "
          "dY_h, dY_c), got " +
          std::to_string(ctx.inputs.size()));
    if (ctx.outputs.size() > 5)
      ctx.fail("has at most 5 outputs (dX, d initial_h, d initial_c, dGates, H)");
  }
  const RnnDims r = parse_dims(ctx, cell, c, host_lens);
  c.r = r;
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, D = r.D, GH = r.G * H;
  const Shape state = {D, B, H};
  if (op == RnnOp::kForward) {
    c.y = output(ctx, 0, {T, D, B, H});
    c.yh = output(ctx, 1, state);
    if (lstm) c.yc = output(ctx, 2, state);
  } else if (op == RnnOp::kFusedGrad) {
    if (ctx.has_out(4)) ctx.fail("sequence_lens has no gradient (output 4 must be absent)");
    c.dy = grad_input(ctx, 6, {T, D, B, H}, "dY");
    c.dyh = grad_input(ctx, 7, state, "dY_h");
    c.dx = output(ctx, 0, {T, B, I});
    c.dw = output(ctx, 1, {D, GH, I});
    c.dr = output(ctx, 2, {D, GH, H});
    c.db = output(ctx, 3, {D, 2 * GH});
    c.dh0 = output(ctx, 5, state);
  } else {
    c.dy = grad_input(ctx, 7, {T, D, B, H}, "dY");
    c.dyh = grad_input(ctx, 8, state, "dY_h");
    c.dyc = grad_input(ctx, 9, state, "dY_c");
    c.dx = output(ctx, 0, {T, B, I});
    c.dh0 = output(ctx, 1, state);
    c.dc0 = output(ctx, 2, state);
    c.dgates = output(ctx, 3, {T, D, B, GH});
    c.hseq = output(ctx, 4, {T, D, B, H});
  }
  return c;
}

LstmWeightsCall parse_lstm_grad_weights(const KernelContext& ctx) {
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
  LstmWeightsCall c;
  RnnDims& r = c.r;
  r.bidirectional = dir == "bidirectional";
  r.reverse = dir == "reverse";
  r.D = r.bidirectional ? 2 : 1;
  if (x.rank() != 3) ctx.fail("X has shape " + shape_to_string(x.shape) + ", expected rank 3");
  if (hs.rank() != 4) ctx.fail("H has shape " + shape_to_string(hs.shape) + ", expected rank 4");
  r.T = x.shape[0], r.B = x.shape[1], r.I = x.shape[2], r.H = hs.shape[3];
  const int64_t T = r.T, B = r.B, I = r.I, H = r.H, D = r.D, GH = 4 * H;
  if (ctx.has_attr("hidden_size") && ctx.attr_int("hidden_size", H) != H)
    ctx.fail("H has shape " + shape_to_string(hs.shape) + ", expected hidden size " +
             std::to_string(ctx.attr_int("hidden_size", H)));
  if (hs.shape != Shape{T, D, B, H})
    ctx.fail("H has shape " + shape_to_string(hs.shape) + ", expected " +
             shape_to_string({T, D, B, H}));
  if (dgt.shape != Shape{T, D, B, GH})
    ctx.fail("dGates has shape " + shape_to_string(dgt.shape) + ", expected " +
             shape_to_string({T, D, B, GH}));
  c.X = x.as<float>();
  c.Hs = hs.as<float>();
  c.dG = dgt.as<float>();
  c.h0 = grad_input(ctx, 2, {D, B, H}, "initial_h");
  c.dw = output(ctx, 0, {D, GH, I});
  c.dr = output(ctx, 1, {D, GH, H});
  c.db = output(ctx, 2, {D, 2 * GH});
  return c;
}

void k_lstm(const KernelContext& ctx) {
  run_host(ctx, RnnCell::kLstm, RnnOp::kForward);
}
void k_gru(const KernelContext& ctx) {
  run_host(ctx, RnnCell::kGru, RnnOp::kForward);
}
void k_rnn(const KernelContext& ctx) {
  run_host(ctx, RnnCell::kRnn, RnnOp::kForward);
}
void k_lstm_grad_data(const KernelContext& ctx) {
  run_host(ctx, RnnCell::kLstm, RnnOp::kLstmGradData);
}
void k_gru_grad(const KernelContext& ctx) {
  run_host(ctx, RnnCell::kGru, RnnOp::kFusedGrad);
}
void k_rnn_grad(const KernelContext& ctx) {
  run_host(ctx, RnnCell::kRnn, RnnOp::kFusedGrad);
}

void k_lstm_grad_weights(const KernelContext& ctx) {
  const LstmWeightsCall c = parse_lstm_grad_weights(ctx);
  HostDevice dev;
  lstm_grad_weights_program(dev, c.r, c.X, c.Hs, c.h0, c.dG, c.dw, c.dr, c.db);
}

}  // namespace planner::rt::kernels
