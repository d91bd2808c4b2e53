// LSTM, GRU and RNN: one step by hand, directions and sequence lengths, and the gradient ops
// (LSTMGradData + LSTMGradWeights, GRUGrad, RNNGrad) against central differences of the forward
// op for every input.
#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::Error;

namespace {

double sig(double v) {
  return 1 / (1 + std::exp(-v));
}

}  // namespace

TEST_CASE("LSTM one step by hand (gates i, o, f, c)") {
  // I = 1, H = 1: W = [wi, wo, wf, wc], R = [ri, ro, rf, rc], B = [Wb(4), Rb(4)]
  Buf x = F({1, 1, 1}, {0.5f}), w = F({1, 4, 1}, {0.1f, 0.2f, 0.3f, 0.4f}),
      r = F({1, 4, 1}, {-0.1f, 0.5f, 0.25f, -0.3f});
  Buf b = F({1, 8}, {0.01f, 0.02f, 0.03f, 0.04f, 0.1f, 0.2f, 0.3f, 0.4f});
  Buf h0 = F({1, 1, 1}, {0.2f}), c0 = F({1, 1, 1}, {0.3f});
  Buf y = Z({1, 1, 1, 1}), yh = Z({1, 1, 1}), yc = Z({1, 1, 1});
  run("LSTM", {{"hidden_size", int64_t{1}}}, {x.t, w.t, r.t, b.t, Tensor{}, h0.t, c0.t},
      {y.t, yh.t, yc.t});
  const double i = sig(0.1 * 0.5 - 0.1 * 0.2 + 0.11), o = sig(0.2 * 0.5 + 0.5 * 0.2 + 0.22);
  const double f = sig(0.3 * 0.5 + 0.25 * 0.2 + 0.33), g = std::tanh(0.4 * 0.5 - 0.3 * 0.2 + 0.44);
  const double c = f * 0.3 + i * g, h = o * std::tanh(c);
  CHECK(yc.f()[0] == doctest::Approx(c).epsilon(1e-6));
  CHECK(yh.f()[0] == doctest::Approx(h).epsilon(1e-6));
  CHECK(y.f()[0] == yh.f()[0]);
}

TEST_CASE("GRU one step by hand (gates z, r, h; linear_before_reset 0 and 1)") {
  Buf x = F({1, 1, 1}, {0.5f}), w = F({1, 3, 1}, {0.1f, 0.2f, 0.3f}),
      r = F({1, 3, 1}, {-0.1f, 0.5f, 0.25f});
  Buf b = F({1, 6}, {0.01f, 0.02f, 0.03f, 0.1f, 0.2f, 0.3f}), h0 = F({1, 1, 1}, {0.2f});
  for (int64_t lbr : {int64_t{0}, int64_t{1}}) {
    Buf yh = Z({1, 1, 1});
    run("GRU", {{"hidden_size", int64_t{1}}, {"linear_before_reset", lbr}},
        {x.t, w.t, r.t, b.t, Tensor{}, h0.t}, {Tensor{}, yh.t});
    const double z = sig(0.1 * 0.5 - 0.1 * 0.2 + 0.11), rr = sig(0.2 * 0.5 + 0.5 * 0.2 + 0.22);
    const double hn = lbr ? std::tanh(0.3 * 0.5 + rr * (0.25 * 0.2 + 0.3) + 0.03)
                          : std::tanh(0.3 * 0.5 + 0.25 * (rr * 0.2) + 0.3 + 0.03);
    CHECK(yh.f()[0] == doctest::Approx((1 - z) * hn + z * 0.2).epsilon(1e-6));
  }
}

TEST_CASE("LSTM directions and sequence lengths") {
  const int64_t T = 4, B = 2, I = 3, H = 2;
  Buf x = R({T, B, I}, 1), w = R({2, 4 * H, I}, 2), r = R({2, 4 * H, H}, 3), b = R({2, 8 * H}, 4);
  Buf y = Z({T, 2, B, H}), yh = Z({2, B, H});
  Buf lens = I64({B}, {4, 2});
  run("LSTM", {{"hidden_size", H}, {"direction", std::string("bidirectional")}},
      {x.t, w.t, r.t, b.t, lens.t}, {y.t, yh.t});
  // steps past a sequence's length are zero
  for (int64_t t = 2; t < T; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t j = 0; j < H; ++j) CHECK(y.f()[((t * 2 + d) * B + 1) * H + j] == 0);
  // the reverse direction of batch row 1 equals a forward run over its reversed 2 steps
  Buf x1 = Z({2, 1, I});
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t k = 0; k < I; ++k) x1.f()[t * I + k] = x.f()[((1 - t) * B + 1) * I + k];
  Buf w1 = Z({1, 4 * H, I}), r1 = Z({1, 4 * H, H}), b1 = Z({1, 8 * H});
  std::copy(w.f() + 4 * H * I, w.f() + 8 * H * I, w1.f());
  std::copy(r.f() + 4 * H * H, r.f() + 8 * H * H, r1.f());
  std::copy(b.f() + 8 * H, b.f() + 16 * H, b1.f());
  Buf y1 = Z({2, 1, 1, H}), yh1 = Z({1, 1, H});
  run("LSTM", {{"hidden_size", H}}, {x1.t, w1.t, r1.t, b1.t}, {y1.t, yh1.t});
  for (int64_t j = 0; j < H; ++j) {
    CHECK(yh.f()[(1 * B + 1) * H + j] == doctest::Approx(yh1.f()[j]).epsilon(1e-6));
    // reverse output at time 0 is the state after consuming both steps
    CHECK(y.f()[((0 * 2 + 1) * B + 1) * H + j] == doctest::Approx(y1.f()[1 * H + j]).epsilon(1e-6));
  }
  // forward Y_h of row 1 is its output at its last valid step
  for (int64_t j = 0; j < H; ++j) CHECK(yh.f()[1 * H + j] == y.f()[((1 * 2 + 0) * B + 1) * H + j]);
  CHECK_THROWS_WITH_AS(run("LSTM", {{"hidden_size", H}}, {x.t, w.t, r.t}, {y.t}),
                       doctest::Contains("W has shape [2,8,3], expected [1,8,3]"), Error);
}

TEST_CASE("RNN one step by hand, and two steps with a reverse direction") {
  Buf x = F({2, 1, 1}, {0.5f, -1.0f}), w = F({1, 1, 1}, {0.7f}), r = F({1, 1, 1}, {-0.4f});
  Buf b = F({1, 2}, {0.1f, 0.05f}), h0 = F({1, 1, 1}, {0.2f});
  Buf y = Z({2, 1, 1, 1}), yh = Z({1, 1, 1});
  run("RNN", {{"hidden_size", int64_t{1}}}, {x.t, w.t, r.t, b.t, Tensor{}, h0.t}, {y.t, yh.t});
  const double h1 = std::tanh(0.7 * 0.5 - 0.4 * 0.2 + 0.15);
  const double h2 = std::tanh(0.7 * -1.0 - 0.4 * h1 + 0.15);
  CHECK(y.f()[0] == doctest::Approx(h1).epsilon(1e-6));
  CHECK(y.f()[1] == doctest::Approx(h2).epsilon(1e-6));
  CHECK(yh.f()[0] == y.f()[1]);
  run("RNN", {{"hidden_size", int64_t{1}}, {"direction", std::string("reverse")}},
      {x.t, w.t, r.t, b.t, Tensor{}, h0.t}, {y.t, yh.t});
  const double g1 = std::tanh(0.7 * -1.0 - 0.4 * 0.2 + 0.15);
  const double g0 = std::tanh(0.7 * 0.5 - 0.4 * g1 + 0.15);
  CHECK(y.f()[1] == doctest::Approx(g1).epsilon(1e-6));
  CHECK(y.f()[0] == doctest::Approx(g0).epsilon(1e-6));
  CHECK(yh.f()[0] == y.f()[0]);
  CHECK_THROWS_WITH_AS(
      run("RNN", {{"activations", std::vector<std::string>{"Relu"}}}, {x.t, w.t, r.t}, {y.t}),
      doctest::Contains("only the default activations"), Error);
}

namespace {

// Y, Y_h (and Y_c) of the forward op, concatenated.
std::vector<float> rnn_outputs(const char* op, const Attributes& a, const std::vector<Tensor>& ins,
                               Shape ys, Shape hs) {
  const bool lstm = std::string(op) == "LSTM";
  Buf y = Z(ys), yh = Z(hs), yc = Z(hs);
  std::vector<Tensor> outs = {y.t, yh.t};
  if (lstm) outs.push_back(yc.t);
  run(op, a, ins, outs);
  std::vector<float> v = y.values();
  for (const Tensor& t : std::vector<Tensor>(outs.begin() + 1, outs.end()))
    v.insert(v.end(), t.as<float>(), t.as<float>() + t.numel());
  return v;
}

// Which optional pieces an LSTM gradient case has.
struct LstmCase {
  int64_t D = 1;
  bool lens = false, bias = true, init = true;  // sequence_lens, B, initial_h and initial_c
  bool dy = true, dyh = true, dyc = true;       // which output gradients reach the op
};

// LSTMGradData followed by LSTMGradWeights (as the training graph chains them) against central
// differences of L = sum(Y*dY) + sum(Y_h*dY_h) + sum(Y_c*dY_c) of the LSTM forward op (an absent
// output gradient weighs its output by zero).
void check_lstm_grad(Attributes a, const LstmCase& c) {
  const int64_t T = 3, B = 2, I = 2, H = 3, D = c.D;
  Buf x = R({T, B, I}, 1), w = R({D, 4 * H, I}, 2), r = R({D, 4 * H, H}, 3), b = R({D, 8 * H}, 4),
      h0 = R({D, B, H}, 5), c0 = R({D, B, H}, 6);
  Buf lens = I64({B}, {3, 2});
  a["hidden_size"] = H;
  std::vector<Tensor> ins = {x.t,
                             w.t,
                             r.t,
                             c.bias ? b.t : Tensor{},
                             c.lens ? lens.t : Tensor{},
                             c.init ? h0.t : Tensor{},
                             c.init ? c0.t : Tensor{}};
  const Shape ys = {T, D, B, H}, hs = {D, B, H};
  Buf dy = R(ys, 7), dyh = R(hs, 8), dyc = R(hs, 9);
  std::vector<float> wts;
  for (auto [g, on] : std::initializer_list<std::pair<const Buf*, bool>>{
           {&dy, c.dy}, {&dyh, c.dyh}, {&dyc, c.dyc}}) {
    std::vector<float> v = g->values();
    if (!on) std::fill(v.begin(), v.end(), 0.0f);
    wts.insert(wts.end(), v.begin(), v.end());
  }
  std::vector<Tensor> gins = ins;
  gins.push_back(c.dy ? dy.t : Tensor{});
  gins.push_back(c.dyh ? dyh.t : Tensor{});
  gins.push_back(c.dyc ? dyc.t : Tensor{});
  Buf dx = Z({T, B, I}), dh0 = Z(hs), dc0 = Z(hs), dgates = R({T, D, B, 4 * H}, 10),
      hseq = R({T, D, B, H}, 11);  // garbage in the outputs: the kernels overwrite them
  run_planner("LSTMGradData", a, gins,
              {dx.t, c.init ? dh0.t : Tensor{}, c.init ? dc0.t : Tensor{}, dgates.t, hseq.t});
  // H is the forward hidden sequence wherever a row is inside its sequence.
  Buf y = Z(ys);
  run("LSTM", a, ins, {y.t});
  const std::vector<int64_t> len = c.lens ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{T, T};
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t bb = 0; bb < B; ++bb)
        if (t < len[static_cast<size_t>(bb)])
          for (int64_t j = 0; j < H; ++j) {
            const int64_t i = ((t * D + d) * B + bb) * H + j;
            CHECK(hseq.f()[i] == y.f()[i]);
          }
  Buf dw = R({D, 4 * H, I}, 12), dr = R({D, 4 * H, H}, 13), db = R({D, 8 * H}, 14);
  run_planner("LSTMGradWeights", a, {x.t, hseq.t, c.init ? h0.t : Tensor{}, dgates.t},
              {dw.t, dr.t, db.t});
  auto f = [&] { return rnn_outputs("LSTM", a, ins, ys, hs); };
  check_grad(f, x, wts, dx.values(), 1e-3);
  check_grad(f, w, wts, dw.values(), 1e-3);
  check_grad(f, r, wts, dr.values(), 1e-3);
  if (c.bias) check_grad(f, b, wts, db.values(), 1e-3);
  if (c.init) {
    check_grad(f, h0, wts, dh0.values(), 1e-3);
    check_grad(f, c0, wts, dc0.values(), 1e-3);
  }
  // Optional outputs: dW alone equals dW of the full call.
  Buf dw_only = Z({D, 4 * H, I});
  run_planner("LSTMGradWeights", a, {x.t, hseq.t, c.init ? h0.t : Tensor{}, dgates.t}, {dw_only.t});
  expect_close(dw_only.values(), dw.values(), 0, 0);
}

// GRUGrad / RNNGrad (inputs X, W, R, B, sequence_lens, initial_h, dY, dY_h) against central
// differences of the forward op.
void check_fused_grad(const char* op, Attributes a, int64_t D, bool with_lens, bool dy_on = true) {
  const int64_t T = 3, B = 2, I = 2, H = 3, G = std::string(op) == "GRU" ? 3 : 1;
  Buf x = R({T, B, I}, 1), w = R({D, G * H, I}, 2), r = R({D, G * H, H}, 3),
      b = R({D, 2 * G * H}, 4), h0 = R({D, B, H}, 5);
  Buf lens = I64({B}, {3, 2});
  a["hidden_size"] = H;
  std::vector<Tensor> ins = {x.t, w.t, r.t, b.t, with_lens ? lens.t : Tensor{}, h0.t};
  const Shape ys = {T, D, B, H}, hs = {D, B, H};
  Buf dy = R(ys, 7), dyh = R(hs, 8);
  std::vector<float> wts = dy.values();
  if (!dy_on) std::fill(wts.begin(), wts.end(), 0.0f);
  std::vector<float> v = dyh.values();
  wts.insert(wts.end(), v.begin(), v.end());
  std::vector<Tensor> gins = ins;
  gins.push_back(dy_on ? dy.t : Tensor{});
  gins.push_back(dyh.t);
  Buf dx = Z({T, B, I}), dw = Z({D, G * H, I}), dr = Z({D, G * H, H}), db = Z({D, 2 * G * H}),
      dh0 = Z(hs);
  run_planner(std::string(op) + "Grad", a, gins, {dx.t, dw.t, dr.t, db.t, Tensor{}, dh0.t});
  auto f = [&] { return rnn_outputs(op, a, ins, ys, hs); };
  check_grad(f, x, wts, dx.values(), 1e-3);
  check_grad(f, w, wts, dw.values(), 1e-3);
  check_grad(f, r, wts, dr.values(), 1e-3);
  check_grad(f, b, wts, db.values(), 1e-3);
  check_grad(f, h0, wts, dh0.values(), 1e-3);
}

}  // namespace

TEST_CASE("LSTMGradData + LSTMGradWeights match central differences of LSTM") {
  SUBCASE("forward") {
    check_lstm_grad({}, {});
  }
  SUBCASE("reverse with sequence_lens") {
    check_lstm_grad({{"direction", std::string("reverse")}}, {.lens = true});
  }
  SUBCASE("bidirectional with sequence_lens") {
    check_lstm_grad({{"direction", std::string("bidirectional")}}, {.D = 2, .lens = true});
  }
  SUBCASE("no B, initial states or dY_c; only dY") {
    check_lstm_grad({}, {.bias = false, .init = false, .dyh = false, .dyc = false});
  }
  SUBCASE("bidirectional, only dY_h and dY_c (as a model using Y_h alone)") {
    check_lstm_grad({{"direction", std::string("bidirectional")}},
                    {.D = 2, .lens = true, .init = false, .dy = false});
  }
  SUBCASE("clip") {
    check_lstm_grad({{"clip", 0.6}}, {});
  }
}

TEST_CASE("LSTMGradData and LSTMGradWeights: absent outputs, shape errors") {
  const int64_t T = 2, B = 1, I = 2, H = 2;
  Buf x = R({T, B, I}, 1), w = R({1, 4 * H, I}, 2), r = R({1, 4 * H, H}, 3),
      dy = R({T, 1, B, H}, 4);
  Attributes a = {{"hidden_size", H}};
  Buf dx = Z({T, B, I}), dg = Z({T, 1, B, 4 * H}), hs = Z({T, 1, B, H});
  run_planner("LSTMGradData", a, {x.t, w.t, r.t, {}, {}, {}, {}, dy.t}, {dx.t, {}, {}, dg.t, hs.t});
  Buf dx2 = Z({T, B, I});
  run_planner("LSTMGradData", a, {x.t, w.t, r.t, {}, {}, {}, {}, dy.t}, {dx2.t});
  expect_close(dx2.values(), dx.values(), 0, 0);
  CHECK_THROWS_WITH_AS(run_planner("LSTMGradData", a, {x.t, w.t, r.t, {}, {}, {}, {}, dy.t},
                                   {dx.t, {}, {}, Z({T, 1, B, H}).t}),
                       doctest::Contains("output 3 has shape [2,1,1,2], expected [2,1,1,8]"),
                       Error);
  CHECK_THROWS_WITH_AS(run_planner("LSTMGradWeights", {{"direction", std::string("bidirectional")}},
                                   {x.t, hs.t, {}, dg.t}, {Z({2, 4 * H, I}).t}),
                       doctest::Contains("H has shape [2,1,1,2], expected [2,2,1,2]"), Error);
  CHECK_THROWS_WITH_AS(
      run_planner("LSTMGradWeights", {{"hidden_size", int64_t{3}}}, {x.t, hs.t, {}, dg.t}, {}),
      doctest::Contains("expected hidden size 3"), Error);
}

TEST_CASE("GRUGrad matches central differences for X, W, R, B, initial_h") {
  SUBCASE("forward") {
    check_fused_grad("GRU", {}, 1, false);
  }
  SUBCASE("linear_before_reset") {
    check_fused_grad("GRU", {{"linear_before_reset", int64_t{1}}}, 1, true);
  }
  SUBCASE("bidirectional with sequence_lens") {
    check_fused_grad("GRU", {{"direction", std::string("bidirectional")}}, 2, true);
  }
  SUBCASE("bidirectional, linear_before_reset, only dY_h") {
    check_fused_grad(
        "GRU", {{"direction", std::string("bidirectional")}, {"linear_before_reset", int64_t{1}}},
        2, false, false);
  }
}

TEST_CASE("RNNGrad matches central differences for X, W, R, B, initial_h") {
  SUBCASE("forward") {
    check_fused_grad("RNN", {}, 1, false);
  }
  SUBCASE("reverse with sequence_lens") {
    check_fused_grad("RNN", {{"direction", std::string("reverse")}}, 1, true);
  }
  SUBCASE("bidirectional with sequence_lens, clip, only dY_h") {
    check_fused_grad("RNN", {{"direction", std::string("bidirectional")}, {"clip", 0.8}}, 2, true,
                     false);
  }
}

TEST_CASE("GRUGrad refuses the old input layout (forward outputs passed)") {
  const int64_t T = 1, B = 1, I = 1, H = 1;
  Buf x = R({T, B, I}, 1), w = R({1, 3, I}, 2), r = R({1, 3, H}, 3);
  std::vector<Tensor> ins = {
      x.t, w.t, r.t, {}, {}, {}, Z({T, 1, B, H}).t, Z({1, B, H}).t, Z({T, 1, B, H}).t};
  CHECK_THROWS_WITH_AS(run_planner("GRUGrad", {}, ins, {Z({T, B, I}).t}),
                       doctest::Contains("takes at most 8 inputs"), Error);
}
