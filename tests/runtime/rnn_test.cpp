// LSTM and GRU: one step by hand, directions and sequence lengths, and LSTMGrad/GRUGrad
// against central differences for every input.
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

namespace {

// Runs the forward op and returns Y, Y_h (and Y_c) concatenated.
std::vector<float> rnn_outputs(bool lstm, const Attributes& a, const std::vector<Tensor>& ins,
                               Shape ys, Shape hs) {
  Buf y = Z(ys), yh = Z(hs), yc = Z(hs);
  std::vector<Tensor> outs = {y.t, yh.t};
  if (lstm) outs.push_back(yc.t);
  run(lstm ? "LSTM" : "GRU", a, ins, outs);
  std::vector<float> v = y.values();
  for (const Tensor& t : std::vector<Tensor>(outs.begin() + 1, outs.end()))
    v.insert(v.end(), t.as<float>(), t.as<float>() + t.numel());
  return v;
}

void check_rnn_grad(bool lstm, Attributes a, int64_t D, bool with_lens) {
  const int64_t T = 3, B = 2, I = 2, H = 3, G = lstm ? 4 : 3;
  Buf x = R({T, B, I}, 1), w = R({D, G * H, I}, 2), r = R({D, G * H, H}, 3),
      b = R({D, 2 * G * H}, 4);
  Buf h0 = R({D, B, H}, 5), c0 = R({D, B, H}, 6);
  Buf lens = I64({B}, {3, 2});
  a["hidden_size"] = H;
  std::vector<Tensor> ins = {x.t, w.t, r.t, b.t, with_lens ? lens.t : Tensor{}, h0.t};
  if (lstm) ins.push_back(c0.t);
  const Shape ys = {T, D, B, H}, hs = {D, B, H};
  Buf y = Z(ys), yh = Z(hs), yc = Z(hs);
  std::vector<Tensor> outs = {y.t, yh.t};
  if (lstm) outs.push_back(yc.t);
  run(lstm ? "LSTM" : "GRU", a, ins, outs);
  Buf dy = R(ys, 7), dyh = R(hs, 8), dyc = R(hs, 9);
  std::vector<float> wts = dy.values();
  for (const Buf* g : {&dyh, &dyc}) {
    if (g == &dyc && !lstm) break;
    std::vector<float> v = g->values();
    wts.insert(wts.end(), v.begin(), v.end());
  }
  std::vector<Tensor> gins = ins;
  for (const Tensor& o : outs) gins.push_back(o);
  gins.push_back(dy.t);
  gins.push_back(dyh.t);
  if (lstm) gins.push_back(dyc.t);
  Buf dx = Z({T, B, I}), dw = Z({D, G * H, I}), dr = Z({D, G * H, H}), db = Z({D, 2 * G * H}),
      dh0 = Z(hs), dc0 = Z(hs);
  std::vector<Tensor> gouts = {dx.t, dw.t, dr.t, db.t, Tensor{}, dh0.t};
  if (lstm) gouts.push_back(dc0.t);
  run_planner(lstm ? "LSTMGrad" : "GRUGrad", a, gins, gouts);
  auto f = [&] { return rnn_outputs(lstm, a, ins, ys, hs); };
  check_grad(f, x, wts, dx.values(), 1e-3);
  check_grad(f, w, wts, dw.values(), 1e-3);
  check_grad(f, r, wts, dr.values(), 1e-3);
  check_grad(f, b, wts, db.values(), 1e-3);
  check_grad(f, h0, wts, dh0.values(), 1e-3);
  if (lstm) check_grad(f, c0, wts, dc0.values(), 1e-3);
}

}  // namespace

TEST_CASE("LSTMGrad matches central differences for X, W, R, B, initial_h, initial_c") {
  SUBCASE("forward") {
    check_rnn_grad(true, {}, 1, false);
  }
  SUBCASE("reverse with sequence_lens") {
    check_rnn_grad(true, {{"direction", std::string("reverse")}}, 1, true);
  }
  SUBCASE("bidirectional with sequence_lens") {
    check_rnn_grad(true, {{"direction", std::string("bidirectional")}}, 2, true);
  }
}

TEST_CASE("GRUGrad matches central differences for X, W, R, B, initial_h") {
  SUBCASE("forward") {
    check_rnn_grad(false, {}, 1, false);
  }
  SUBCASE("linear_before_reset") {
    check_rnn_grad(false, {{"linear_before_reset", int64_t{1}}}, 1, true);
  }
  SUBCASE("bidirectional with sequence_lens") {
    check_rnn_grad(false, {{"direction", std::string("bidirectional")}}, 2, true);
  }
  SUBCASE("bidirectional, linear_before_reset") {
    check_rnn_grad(
        false, {{"direction", std::string("bidirectional")}, {"linear_before_reset", int64_t{1}}},
        2, false);
  }
}
