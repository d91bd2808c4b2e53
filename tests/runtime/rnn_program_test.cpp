// The recurrent kernels both backends run (rnn_program.h over rnn_math.h's element bodies)
// against an independent reference of the ONNX definitions (rnn_reference.cpp): LSTM, GRU
// (linear_before_reset 0 and 1) and RNN, forward, reverse and bidirectional, sequence lengths
// (int32 and int64), clip, with and without bias and initial states; forward outputs and every
// gradient. The program's structure (one input GEMM per direction, one recurrent GEMM per step)
// is counted on a recording device.
#include <doctest/doctest.h>

#include "../../runtime_stub/src/rnn.h"
#include "rnn_reference.h"
#include "rt_test_util.h"

using namespace rt_test;
namespace k = planner::rt::kernels;

namespace {

struct Case {
  std::string op;  // LSTM, GRU, RNN
  std::string direction = "forward";
  int lens = 0;  // 0 none, 32 int32, 64 int64
  float clip = 0;
  int64_t lbr = 0;
  bool bias = true, init = true;
  std::string name() const {
    return op + " " + direction + " lens=" + std::to_string(lens) +
           " clip=" + std::to_string(clip) + " lbr=" + std::to_string(lbr) +
           " bias=" + std::to_string(bias) + " init=" + std::to_string(init);
  }
};

constexpr int64_t T = 5, B = 3, I = 4, H = 3;

struct Inputs {
  Attributes attrs;
  int64_t D = 1, G = 4;
  Buf x, w, r, b, h0, c0, lens, dy, dyh, dyc;
  std::vector<Tensor> forward;  // X, W, R, B, sequence_lens, initial_h[, initial_c]
};

Inputs make(const Case& c) {
  Inputs in;
  in.D = c.direction == "bidirectional" ? 2 : 1;
  in.G = c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1;
  const int64_t D = in.D, GH = in.G * H;
  in.attrs = {{"hidden_size", H}, {"direction", c.direction}};
  if (c.clip > 0) in.attrs["clip"] = static_cast<double>(c.clip);
  if (c.op == "GRU") in.attrs["linear_before_reset"] = c.lbr;
  // Wide enough weights that clip (0.5) cuts some pre-activations and not others.
  in.x = R({T, B, I}, 1), in.w = R({D, GH, I}, 2, -0.6, 0.6), in.r = R({D, GH, H}, 3, -0.6, 0.6);
  in.b = R({D, 2 * GH}, 4, -0.3, 0.3), in.h0 = R({D, B, H}, 5), in.c0 = R({D, B, H}, 6);
  in.lens = Buf(c.lens == 32 ? DType::kInt32 : DType::kInt64, {B});
  const int64_t lens[B] = {5, 2, 4};
  for (int64_t i = 0; i < B; ++i)
    if (c.lens == 32)
      in.lens.t.as<int32_t>()[i] = static_cast<int32_t>(lens[i]);
    else
      in.lens.t.as<int64_t>()[i] = lens[i];
  in.dy = R({T, D, B, H}, 7), in.dyh = R({D, B, H}, 8), in.dyc = R({D, B, H}, 9);
  in.forward = {in.x.t,
                in.w.t,
                in.r.t,
                c.bias ? in.b.t : Tensor{},
                c.lens ? in.lens.t : Tensor{},
                c.init ? in.h0.t : Tensor{}};
  if (c.op == "LSTM") in.forward.push_back(c.init ? in.c0.t : Tensor{});
  return in;
}

using Kernel = void (*)(const k::KernelContext&);

// Runs `fn` on fresh outputs of `shapes` (filled with garbage: kernels overwrite them).
std::vector<Buf> call(Kernel fn, const char* op, const Attributes& attrs,
                      const std::vector<Tensor>& ins, const std::vector<Shape>& shapes) {
  std::vector<Buf> outs;
  std::vector<Tensor> ts;
  for (size_t i = 0; i < shapes.size(); ++i) {
    outs.push_back(R(shapes[i], 100 + i, 5, 6));
    ts.push_back(outs.back().t);
  }
  k::KernelContext ctx{op, "n", attrs, ins, ts};
  fn(ctx);
  return outs;
}

void compare(const std::vector<Buf>& got, const std::vector<Buf>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    expect_close(got[i].values(), want[i].values(), 2e-6, 2e-5);
  }
}

void check_case(const Case& c) {
  INFO(c.name());
  Inputs in = make(c);
  const int64_t D = in.D, GH = in.G * H;
  const Shape ys = {T, D, B, H}, hs = {D, B, H};
  const bool lstm = c.op == "LSTM";
  Kernel fwd = lstm ? k::k_lstm : c.op == "GRU" ? k::k_gru : k::k_rnn;
  Kernel ref = lstm ? rnn_reference::lstm : c.op == "GRU" ? rnn_reference::gru : rnn_reference::rnn;
  std::vector<Shape> fshapes = {ys, hs};
  if (lstm) fshapes.push_back(hs);
  compare(call(fwd, c.op.c_str(), in.attrs, in.forward, fshapes),
          call(ref, c.op.c_str(), in.attrs, in.forward, fshapes));
  std::vector<Tensor> gins = in.forward;
  if (lstm) {
    gins.insert(gins.end(), {in.dy.t, in.dyh.t, in.dyc.t});
    const std::vector<Shape> gshapes = {{T, B, I}, hs, hs, {T, D, B, GH}, ys};
    const auto got = call(k::k_lstm_grad_data, "LSTMGradData", in.attrs, gins, gshapes);
    const auto want = call(rnn_reference::lstm_grad_data, "LSTMGradData", in.attrs, gins, gshapes);
    compare(got, want);
    const std::vector<Tensor> wins = {in.x.t, want[4].t, c.init ? in.h0.t : Tensor{}, want[3].t};
    const std::vector<Shape> wshapes = {{D, GH, I}, {D, GH, H}, {D, 2 * GH}};
    compare(call(k::k_lstm_grad_weights, "LSTMGradWeights", in.attrs, wins, wshapes),
            call(rnn_reference::lstm_grad_weights, "LSTMGradWeights", in.attrs, wins, wshapes));
    return;
  }
  gins.insert(gins.end(), {in.dy.t, in.dyh.t});
  const std::vector<Shape> gshapes = {{T, B, I}, {D, GH, I}, {D, GH, H}, {D, 2 * GH}, {}, hs};
  Kernel grad = c.op == "GRU" ? k::k_gru_grad : k::k_rnn_grad;
  Kernel gref = c.op == "GRU" ? rnn_reference::gru_grad : rnn_reference::rnn_grad;
  // Output 4 (sequence_lens) has no gradient: absent.
  auto drop4 = [&](Kernel fn) {
    std::vector<Buf> outs;
    std::vector<Tensor> ts;
    for (size_t i = 0; i < gshapes.size(); ++i) {
      outs.push_back(i == 4 ? Buf() : R(gshapes[i], 100 + i, 5, 6));
      ts.push_back(i == 4 ? Tensor{} : outs.back().t);
    }
    k::KernelContext ctx{"Grad", "n", in.attrs, gins, ts};
    fn(ctx);
    outs.erase(outs.begin() + 4);
    return outs;
  };
  compare(drop4(grad), drop4(gref));
}

// A device that runs the program on the host and counts what it is asked to do.
struct CountingDevice {
  int gemms = 0, launches = 0;
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t kk, float alpha, const float* a,
            int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    ++gemms;
    k::sgemm(ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void run(k::RnnKernel kind, const k::RnnStep& p, int64_t n) {
    ++launches;
    for (int64_t e = 0; e < n; ++e) k::rnn_element(kind, p, e);
  }
  void copy(float* dst, const float* src, int64_t n) { std::copy(src, src + n, dst); }
  void zero(void* dst, int64_t bytes) { std::memset(dst, 0, static_cast<size_t>(bytes)); }
};

}  // namespace

TEST_CASE("recurrent kernels equal the reference: every cell, direction and option") {
  int cases = 0;
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int lens : {0, 32, 64})
        for (float clip : {0.0f, 0.5f})
          for (int64_t lbr : {int64_t{0}, int64_t{1}}) {
            if (lbr && std::string(op) != "GRU") continue;
            for (int opt = 0; opt < 2; ++opt) {
              Case c{op, dir, lens, clip, lbr, opt == 0, opt == 0};
              check_case(c);
              ++cases;
            }
          }
  CHECK(cases == 144);
}

TEST_CASE("the recurrent program: one input GEMM per direction, one recurrent GEMM per step") {
  Inputs in = make(Case{"LSTM"});
  const int64_t GH = 4 * H;
  Buf y = Z({T, 1, B, H}), yh = Z({1, B, H}), yc = Z({1, B, H});
  std::vector<Tensor> outs = {y.t, yh.t, yc.t};
  k::KernelContext ctx{"LSTM", "n", in.attrs, in.forward, outs};
  k::RnnCall call = k::parse_rnn_call(ctx, k::RnnCell::kLstm, k::RnnOp::kForward, true);
  std::vector<float> ws(static_cast<size_t>(k::rnn_workspace_floats(call.r, false)));
  call.ws = ws.data();
  CountingDevice dev;
  k::rnn_forward_program(dev, call);
  CHECK(dev.gemms == 1 + T);
  CHECK(dev.launches == 2 + T);  // gather X, initial state, one cell kernel per step
  Buf y2 = Z({T, 1, B, H});
  run("LSTM", in.attrs, in.forward, {y2.t});
  expect_close(y.values(), y2.values(), 0, 0);  // the backend runs this very program
  // Backward: the forward pass again, then per step one cell kernel, one dG R product and one
  // state kernel; the weight, bias and input gradients once over every step.
  Buf dx = Z({T, B, I}), dgates = Z({T, 1, B, GH}), hseq = Z({T, 1, B, H});
  std::vector<Tensor> gins = in.forward;
  gins.insert(gins.end(), {in.dy.t, in.dyh.t, in.dyc.t});
  std::vector<Tensor> gouts = {dx.t, Tensor{}, Tensor{}, dgates.t, hseq.t};
  k::KernelContext gctx{"LSTMGradData", "n", in.attrs, gins, gouts};
  k::RnnCall g = k::parse_rnn_call(gctx, k::RnnCell::kLstm, k::RnnOp::kLstmGradData, true);
  std::vector<float> gws(static_cast<size_t>(k::rnn_workspace_floats(g.r, true)));
  g.ws = gws.data();
  CountingDevice gdev;
  k::rnn_backward_program(gdev, g);
  CHECK(gdev.gemms == (1 + T) + T + 1);             // forward, dG R per step, dX
  CHECK(gdev.launches == (2 + T) + 1 + 2 * T + 2);  // forward, dH init, 2 per step, dX, dGates
}

TEST_CASE("sequence lengths outside [0, T] are rejected on the host") {
  Inputs in = make(Case{"LSTM", "forward", 64});
  in.lens.t.as<int64_t>()[1] = T + 1;
  Buf y = Z({T, 1, B, H});
  CHECK_THROWS_WITH_AS(run("LSTM", in.attrs, in.forward, {y.t}),
                       doctest::Contains("sequence length 6 is outside [0, 5]"),
                       planner::rt::Error);
}
