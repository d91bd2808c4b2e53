// Forward kernels against naive reference loops and hand-computed values.
#include <algorithm>
#include <limits>

#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::Error;

TEST_CASE("binary ops broadcast like numpy") {
  Buf a = R({2, 3, 1}, 1), b = R({4}, 2, 0.5, 2);
  Buf y = Z({2, 3, 4});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    run(op, {}, {a.t, b.t}, {y.t});
    std::vector<float> ref;
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 4; ++j) {
        float u = a.f()[i], v = b.f()[j];
        std::string o = op;
        ref.push_back(o == "Add" ? u + v : o == "Sub" ? u - v : o == "Mul" ? u * v : u / v);
      }
    INFO(op);
    expect_close(y.values(), ref, 0, 0);
  }
  Buf p = Z({2, 3, 4});
  run("Pow", {}, {b.t, F({}, {2.0f}).t}, {Z({4}).t});
  Buf e = Z({4});
  run("Pow", {}, {b.t, I64({1}, {3}).t}, {e.t});
  for (int j = 0; j < 4; ++j) CHECK(e.f()[j] == doctest::Approx(std::pow(b.f()[j], 3)));
  CHECK_THROWS_WITH_AS(run("Add", {}, {a.t, Z({4, 4}).t}, {y.t}),
                       doctest::Contains("shapes [2,3,1] and [4,4] cannot be broadcast"), Error);
  CHECK_THROWS_WITH_AS(
      run("Add", {}, {a.t, b.t}, {Z({2, 3, 5}).t}),
      doctest::Contains("node 'n' (Add): output 0 has shape [2,3,5], expected [2,3,4]"), Error);
}

TEST_CASE("integer arithmetic, comparisons, Where, Not, Cast") {
  Buf a = I64({3}, {7, -7, 4}), b = I64({3}, {2, 2, 0});
  Buf y(DType::kInt64, {3});
  run("Add", {}, {a.t, b.t}, {y.t});
  CHECK(y.t.as<int64_t>()[1] == -5);
  CHECK_THROWS_WITH_AS(run("Div", {}, {a.t, b.t}, {y.t}), doctest::Contains("division by zero"),
                       Error);
  Buf lt(DType::kBool, {3});
  run("Less", {}, {a.t, b.t}, {lt.t});
  CHECK(lt.t.as<bool>()[0] == false);
  CHECK(lt.t.as<bool>()[1] == true);
  run("Equal", {}, {a.t, a.t}, {lt.t});
  CHECK(lt.t.as<bool>()[2] == true);
  Buf nt(DType::kBool, {3});
  run("Not", {}, {lt.t}, {nt.t});
  CHECK(nt.t.as<bool>()[0] == false);
  Buf c = Bools({2, 1}, {1, 0});
  Buf x = F({3}, {1, 2, 3}), z = F({1}, {-1});
  Buf w = Z({2, 3});
  run("Where", {}, {c.t, x.t, z.t}, {w.t});
  expect_close(w.values(), {1, 2, 3, -1, -1, -1}, 0, 0);
  Buf f = F({4}, {1.7f, -1.7f, 0.0f, 3e10f});
  Buf i(DType::kInt64, {4});
  run("Cast", {{"to", int64_t{7}}}, {f.t}, {i.t});
  CHECK(i.t.as<int64_t>()[0] == 1);
  CHECK(i.t.as<int64_t>()[1] == -1);
  CHECK(i.t.as<int64_t>()[3] == static_cast<int64_t>(3e10f));
  Buf bo(DType::kBool, {4});
  run("Cast", {{"to", int64_t{9}}}, {f.t}, {bo.t});
  CHECK(bo.t.as<bool>()[2] == false);
  Buf h(DType::kFloat16, {4}), back = Z({4});
  run("Cast", {{"to", int64_t{10}}}, {F({4}, {1.0f, -2.5f, 0.1f, 65504.0f}).t}, {h.t});
  run("Cast", {{"to", int64_t{1}}}, {h.t}, {back.t});
  expect_close(back.values(), {1.0f, -2.5f, 0.0999755859375f, 65504.0f}, 0, 0);
  CHECK_THROWS_WITH_AS(run("Cast", {{"to", int64_t{6}}}, {f.t}, {i.t}),
                       doctest::Contains("does not match the output type"), Error);
  // CastLike takes the type of its second input, whose values it does not read.
  Buf like(DType::kInt64, {1});
  Buf i2(DType::kInt64, {4});
  run("CastLike", {}, {f.t, like.t}, {i2.t});
  CHECK(i2.t.as<int64_t>()[1] == -1);
  CHECK_THROWS_WITH_AS(run("CastLike", {}, {f.t, like.t}, {bo.t}),
                       doctest::Contains("does not match the output type"), Error);
}

TEST_CASE("variadic Sum/Max/Min, Clip, Identity, Dropout, unary functions") {
  Buf a = F({2, 1}, {1, 5}), b = F({3}, {2, 3, 4}), c = F({1}, {10});
  Buf y = Z({2, 3});
  run("Sum", {}, {a.t, b.t, c.t}, {y.t});
  expect_close(y.values(), {13, 14, 15, 17, 18, 19}, 0, 0);
  run("Max", {}, {a.t, b.t}, {y.t});
  expect_close(y.values(), {2, 3, 4, 5, 5, 5}, 0, 0);
  run("Min", {}, {a.t, b.t}, {y.t});
  expect_close(y.values(), {1, 1, 1, 2, 3, 4}, 0, 0);
  Buf x = F({4}, {-2, -0.5f, 0.5f, 2}), o = Z({4});
  run("Clip", {}, {x.t, F({}, {-1}).t, F({}, {1}).t}, {o.t});
  expect_close(o.values(), {-1, -0.5f, 0.5f, 1}, 0, 0);
  run("Clip", {}, {x.t, Tensor{}, F({}, {0}).t}, {o.t});
  expect_close(o.values(), {-2, -0.5f, 0, 0}, 0, 0);
  Buf m(DType::kBool, {4});
  run("Dropout", {}, {x.t}, {o.t, m.t});
  expect_close(o.values(), x.values(), 0, 0);
  CHECK(std::all_of(m.t.as<bool>(), m.t.as<bool>() + 4, [](bool v) { return v; }));
}

TEST_CASE("Dropout in training mode is refused") {
  Buf x = F({2}, {1, 2}), o = Z({2});
  CHECK_THROWS_WITH_AS(run("Dropout", {}, {x.t, F({}, {0.5f}).t, Bools({}, {1}).t}, {o.t}),
                       doctest::Contains("training_mode"), Error);
}

TEST_CASE("unary function values") {
  Buf x = F({5}, {-2, -0.5f, 0, 0.5f, 2}), y = Z({5});
  auto check = [&](const char* op, std::function<double(double)> f, Attributes attrs = {}) {
    run(op, attrs, {x.t}, {y.t});
    std::vector<float> ref;
    for (float v : x.values()) ref.push_back(static_cast<float>(f(v)));
    INFO(op);
    expect_close(y.values(), ref, 1e-6, 1e-6);
  };
  check("Relu", [](double v) { return v > 0 ? v : 0; });
  check("Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); });
  check("Tanh", [](double v) { return std::tanh(v); });
  check("Erf", [](double v) { return std::erf(v); });
  check("Exp", [](double v) { return std::exp(v); });
  check("Neg", [](double v) { return -v; });
  check("Abs", [](double v) { return std::fabs(v); });
  check("Gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  check("LeakyRelu", [](double v) { return v < 0 ? 0.1 * v : v; }, {{"alpha", 0.1}});
  check("HardSigmoid", [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); });
  Buf p = F({2}, {4, 9}), q = Z({2});
  run("Sqrt", {}, {p.t}, {q.t});
  expect_close(q.values(), {2, 3}, 0, 0);
  run("Log", {}, {p.t}, {q.t});
  expect_close(q.values(), {std::log(4.0f), std::log(9.0f)});
}

namespace {

std::vector<float> naive_matmul(const Buf& a, const Buf& b, int64_t m, int64_t k, int64_t n,
                                int64_t abatch_stride, int64_t bbatch_stride, int64_t batches) {
  std::vector<float> y;
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += a.f()[bt * abatch_stride + i * k + q] * b.f()[bt * bbatch_stride + q * n + j];
        y.push_back(static_cast<float>(s));
      }
  return y;
}

}  // namespace

TEST_CASE("MatMul: batched, broadcast, 1-D") {
  Buf a = R({2, 3, 4}, 3), b = R({4, 5}, 4), y = Z({2, 3, 5});
  run("MatMul", {}, {a.t, b.t}, {y.t});
  expect_close(y.values(), naive_matmul(a, b, 6, 4, 5, 0, 0, 1), 1e-5, 1e-5);
  Buf b3 = R({2, 4, 5}, 5);
  run("MatMul", {}, {a.t, b3.t}, {y.t});
  expect_close(y.values(), naive_matmul(a, b3, 3, 4, 5, 12, 20, 2), 1e-5, 1e-5);
  // [2,1,3,4] x [3,4,2] -> [2,3,3,2]: A broadcast over the 3, B over the 2
  Buf a4 = R({2, 1, 3, 4}, 6), b4 = R({3, 4, 2}, 7), y4 = Z({2, 3, 3, 2});
  run("MatMul", {}, {a4.t, b4.t}, {y4.t});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 2; ++c) {
          double s = 0;
          for (int q = 0; q < 4; ++q) s += a4.f()[i * 12 + r * 4 + q] * b4.f()[j * 8 + q * 2 + c];
          CHECK(y4.f()[((i * 3 + j) * 3 + r) * 2 + c] == doctest::Approx(s).epsilon(1e-5));
        }
  Buf v = R({4}, 8), yv = Z({2, 3});
  run("MatMul", {}, {a.t, v.t}, {yv.t});
  CHECK(yv.f()[4] == doctest::Approx(a.f()[16] * v.f()[0] + a.f()[17] * v.f()[1] +
                                     a.f()[18] * v.f()[2] + a.f()[19] * v.f()[3]));
  CHECK_THROWS_WITH_AS(run("MatMul", {}, {a.t, R({5, 5}, 1).t}, {y.t}),
                       doctest::Contains("inner dimensions differ"), Error);
}

TEST_CASE("Gemm: transA, transB, alpha, beta, broadcast C") {
  Buf a = R({4, 3}, 1), b = R({5, 4}, 2), c = R({5}, 3), y = Z({3, 5});
  run("Gemm", {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}},
      {a.t, b.t, c.t}, {y.t});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      double s = 0;
      for (int q = 0; q < 4; ++q) s += a.f()[q * 3 + i] * b.f()[j * 4 + q];
      CHECK(y.f()[i * 5 + j] == doctest::Approx(0.5 * s + 2.0 * c.f()[j]).epsilon(1e-5));
    }
  Buf c2 = R({3, 1}, 4);
  Buf a2 = R({3, 4}, 5), b2 = R({4, 5}, 6);
  run("Gemm", {}, {a2.t, b2.t, c2.t}, {y.t});
  double s = 0;
  for (int q = 0; q < 4; ++q) s += a2.f()[2 * 4 + q] * b2.f()[q * 5 + 1];
  CHECK(y.f()[2 * 5 + 1] == doctest::Approx(s + c2.f()[2]).epsilon(1e-5));
}

namespace {

// The 7-loop definition of a 2-D convolution (batch, out channel, out y, out x, in channel of
// the group, kernel y, kernel x).
std::vector<float> naive_conv2d(const Buf& x, const Buf& w, const Buf* b, int64_t group,
                                Shape strides, Shape pads, Shape dil, Shape out) {
  const int64_t N = x.t.shape[0], C = x.t.shape[1], H = x.t.shape[2], W = x.t.shape[3];
  const int64_t M = w.t.shape[0], CG = w.t.shape[1], KH = w.t.shape[2], KW = w.t.shape[3];
  const int64_t OH = out[0], OW = out[1];
  std::vector<float> y(static_cast<size_t>(N * M * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double s = b ? b->f()[m] : 0.0;
          const int64_t g = m / (M / group);
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t iy = oy * strides[0] - pads[0] + ky * dil[0];
                const int64_t ix = ox * strides[1] - pads[1] + kx * dil[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                s += x.f()[((n * C + g * CG + c) * H + iy) * W + ix] *
                     w.f()[((m * CG + c) * KH + ky) * KW + kx];
              }
          y[static_cast<size_t>(((n * M + m) * OH + oy) * OW + ox)] = static_cast<float>(s);
        }
  return y;
}

}  // namespace

TEST_CASE("Conv 2-D with pads, strides, dilations and groups matches the 7-loop reference") {
  struct Case {
    int64_t c, m, group, h, w, kh, kw;
    Shape strides, pads, dil;
  };
  for (const Case& k : {Case{4, 6, 2, 7, 8, 3, 2, {2, 1}, {1, 0, 2, 1}, {1, 2}},
                        Case{3, 3, 3, 5, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},  // depthwise
                        Case{2, 4, 1, 6, 6, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}},
                        Case{4, 8, 4, 9, 7, 3, 3, {3, 2}, {2, 1, 0, 2}, {2, 1}}}) {
    Buf x = R({2, k.c, k.h, k.w}, 11), w = R({k.m, k.c / k.group, k.kh, k.kw}, 12),
        b = R({k.m}, 13);
    Shape out = {(k.h + k.pads[0] + k.pads[2] - (k.kh - 1) * k.dil[0] - 1) / k.strides[0] + 1,
                 (k.w + k.pads[1] + k.pads[3] - (k.kw - 1) * k.dil[1] - 1) / k.strides[1] + 1};
    Buf y = Z({2, k.m, out[0], out[1]});
    run("Conv",
        {{"group", k.group}, {"strides", k.strides}, {"pads", k.pads}, {"dilations", k.dil}},
        {x.t, w.t, b.t}, {y.t});
    expect_close(y.values(),
                 naive_conv2d(x, w, &b, k.group, k.strides, {k.pads[0], k.pads[1]}, k.dil, out),
                 1e-5, 1e-4);
  }
}

TEST_CASE("Conv 1-D, 3-D and auto_pad") {
  Buf x = R({1, 2, 9}, 1), w = R({3, 2, 3}, 2), y = Z({1, 3, 5});
  run("Conv", {{"strides", Shape{2}}, {"pads", Shape{1, 1}}}, {x.t, w.t}, {y.t});
  for (int m = 0; m < 3; ++m)
    for (int o = 0; o < 5; ++o) {
      double s = 0;
      for (int c = 0; c < 2; ++c)
        for (int k = 0; k < 3; ++k) {
          int i = o * 2 - 1 + k;
          if (i >= 0 && i < 9) s += x.f()[c * 9 + i] * w.f()[(m * 2 + c) * 3 + k];
        }
      CHECK(y.f()[m * 5 + o] == doctest::Approx(s).epsilon(1e-5));
    }
  Buf x3 = R({1, 1, 3, 4, 5}, 3), w3 = R({2, 1, 2, 2, 2}, 4), y3 = Z({1, 2, 2, 3, 4});
  run("Conv", {}, {x3.t, w3.t}, {y3.t});
  double s = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 2; ++c)
        s += x3.f()[(1 + a) * 20 + (2 + b) * 5 + (3 + c)] * w3.f()[8 + a * 4 + b * 2 + c];
  CHECK(y3.f()[((1 * 2 + 1) * 3 + 2) * 4 + 3] == doctest::Approx(s).epsilon(1e-5));
  Buf xs = R({1, 1, 5, 5}, 5), ws = R({1, 1, 3, 3}, 6), ys = Z({1, 1, 3, 3});
  run("Conv", {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Shape{2, 2}}}, {xs.t, ws.t},
      {ys.t});
  // SAME_UPPER with stride 2 on 5: total pad 2, begin 1: output (0,0) centred on input (0,0).
  CHECK(ys.f()[0] ==
        doctest::Approx(naive_conv2d(xs, ws, nullptr, 1, {2, 2}, {1, 1}, {1, 1}, {3, 3})[0]));
  CHECK_THROWS_WITH_AS(run("Conv", {}, {xs.t, ws.t}, {Z({1, 1, 2, 2}).t}),
                       doctest::Contains("output 0 has shape [1,1,2,2], expected [1,1,3,3]"),
                       Error);
}

TEST_CASE("MaxPool, AveragePool (count_include_pad, ceil_mode), GlobalAveragePool") {
  Buf x = F({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Buf y = Z({1, 1, 2, 2});
  Attributes pads = {
      {"kernel_shape", Shape{2, 2}}, {"pads", Shape{1, 1, 0, 0}}, {"strides", Shape{2, 2}}};
  run("MaxPool", pads, {x.t}, {y.t});
  expect_close(y.values(), {1, 3, 7, 9}, 0, 0);
  run("AveragePool", pads, {x.t}, {y.t});
  expect_close(y.values(), {1, 2.5f, 5.5f, 7}, 0, 0);
  Attributes inc = pads;
  inc["count_include_pad"] = int64_t{1};
  run("AveragePool", inc, {x.t}, {y.t});
  expect_close(y.values(), {0.25f, 1.25f, 2.75f, 7}, 0, 0);
  Buf yc = Z({1, 1, 2, 2});
  run("MaxPool",
      {{"kernel_shape", Shape{2, 2}}, {"strides", Shape{2, 2}}, {"ceil_mode", int64_t{1}}}, {x.t},
      {yc.t});
  expect_close(yc.values(), {5, 6, 8, 9}, 0, 0);
  Buf idx(DType::kInt64, {1, 1, 2, 2});
  run("MaxPool",
      {{"kernel_shape", Shape{2, 2}}, {"strides", Shape{2, 2}}, {"ceil_mode", int64_t{1}}}, {x.t},
      {yc.t, idx.t});
  CHECK(idx.t.as<int64_t>()[0] == 4);
  CHECK(idx.t.as<int64_t>()[3] == 8);
  Buf g = Z({1, 1, 1, 1});
  run("GlobalAveragePool", {}, {x.t}, {g.t});
  CHECK(g.f()[0] == doctest::Approx(5));
  run("GlobalMaxPool", {}, {x.t}, {g.t});
  CHECK(g.f()[0] == 9);
}

TEST_CASE("BatchNormalization, LayerNormalization, Softmax, LogSoftmax") {
  Buf x = R({2, 3, 4}, 1);
  Buf sc = F({3}, {1, 2, 3}), b = F({3}, {0, 1, -1}), mean = F({3}, {0.1f, 0.2f, 0.3f}),
      var = F({3}, {1, 4, 9});
  Buf y = Z({2, 3, 4});
  run("BatchNormalization", {{"epsilon", 0.0}}, {x.t, sc.t, b.t, mean.t, var.t}, {y.t});
  CHECK(y.f()[1 * 12 + 2 * 4 + 3] == doctest::Approx((x.f()[23] - 0.3) / 3 * 3 - 1));
  Buf s4 = R({4}, 2), b4 = R({4}, 3), mo = Z({2, 3, 1}), io = Z({2, 3, 1});
  run("LayerNormalization", {{"epsilon", 1e-5}}, {x.t, s4.t, b4.t}, {y.t, mo.t, io.t});
  for (int r = 0; r < 6; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < 4; ++i) m += x.f()[r * 4 + i];
    m /= 4;
    for (int i = 0; i < 4; ++i) v += (x.f()[r * 4 + i] - m) * (x.f()[r * 4 + i] - m);
    v /= 4;
    CHECK(mo.f()[r] == doctest::Approx(m).epsilon(1e-5));
    CHECK(io.f()[r] == doctest::Approx(1 / std::sqrt(v + 1e-5)).epsilon(1e-4));
    for (int i = 0; i < 4; ++i)
      CHECK(y.f()[r * 4 + i] ==
            doctest::Approx((x.f()[r * 4 + i] - m) / std::sqrt(v + 1e-5) * s4.f()[i] + b4.f()[i])
                .epsilon(1e-4));
  }
  Buf s12 = R({3, 4}, 4), m1 = Z({2, 1, 1});
  run("LayerNormalization", {{"axis", int64_t{1}}}, {x.t, s12.t}, {y.t, m1.t});
  double m = 0;
  for (int i = 0; i < 12; ++i) m += x.f()[12 + i];
  CHECK(m1.f()[1] == doctest::Approx(m / 12).epsilon(1e-5));
  run("Softmax", {{"axis", int64_t{1}}}, {x.t}, {y.t});
  double den = 0;
  for (int c = 0; c < 3; ++c) den += std::exp(x.f()[12 + c * 4 + 2]);
  CHECK(y.f()[12 + 1 * 4 + 2] == doctest::Approx(std::exp(x.f()[12 + 4 + 2]) / den).epsilon(1e-5));
  run("LogSoftmax", {}, {x.t}, {y.t});
  den = 0;
  for (int i = 0; i < 4; ++i) den += std::exp(x.f()[i]);
  CHECK(y.f()[1] == doctest::Approx(x.f()[1] - std::log(den)).epsilon(1e-5));
}

TEST_CASE("reductions: axes attribute and input, keepdims, noop_with_empty_axes") {
  Buf x = F({2, 3}, {1, 5, 3, 4, 2, 6});
  Buf y = Z({2, 1});
  run("ReduceSum", {}, {x.t, I64({1}, {-1}).t}, {y.t});
  expect_close(y.values(), {9, 12}, 0, 0);
  Buf y3 = Z({3});
  run("ReduceMean", {{"axes", Shape{0}}, {"keepdims", int64_t{0}}}, {x.t}, {y3.t});
  expect_close(y3.values(), {2.5f, 3.5f, 4.5f}, 0, 0);
  run("ReduceMax", {{"axes", Shape{0}}, {"keepdims", int64_t{0}}}, {x.t}, {y3.t});
  expect_close(y3.values(), {4, 5, 6}, 0, 0);
  run("ReduceMin", {{"axes", Shape{0}}, {"keepdims", int64_t{0}}}, {x.t}, {y3.t});
  expect_close(y3.values(), {1, 2, 3}, 0, 0);
  Buf all = Z({1, 1});
  run("ReduceSum", {}, {x.t}, {all.t});
  CHECK(all.f()[0] == 21);
  Buf same = Z({2, 3});
  run("ReduceSum", {{"noop_with_empty_axes", int64_t{1}}}, {x.t, I64({0}, {}).t}, {same.t});
  expect_close(same.values(), x.values(), 0, 0);
  CHECK_THROWS_WITH_AS(run("ReduceSum", {}, {x.t, I64({1}, {2}).t}, {y.t}),
                       doctest::Contains("out of range"), Error);
}

TEST_CASE("Transpose, Reshape, Flatten, Squeeze, Unsqueeze") {
  Buf x = R({2, 3, 4}, 1), y = Z({4, 2, 3});
  run("Transpose", {{"perm", Shape{2, 0, 1}}}, {x.t}, {y.t});
  CHECK(y.f()[(3 * 2 + 1) * 3 + 2] == x.f()[(1 * 3 + 2) * 4 + 3]);
  Buf r = Z({2, 12});
  run("Reshape", {}, {x.t, I64({2}, {0, -1}).t}, {r.t});
  expect_close(r.values(), x.values(), 0, 0);
  CHECK_THROWS_WITH_AS(run("Reshape", {}, {x.t, I64({2}, {5, -1}).t}, {r.t}),
                       doctest::Contains("cannot infer"), Error);
  Buf f = Z({6, 4});
  run("Flatten", {{"axis", int64_t{2}}}, {x.t}, {f.t});
  Buf u = Z({2, 1, 3, 4, 1});
  run("Unsqueeze", {}, {x.t, I64({2}, {1, -1}).t}, {u.t});
  Buf s = Z({2, 3, 4});
  run("Squeeze", {}, {u.t, I64({2}, {1, 4}).t}, {s.t});
  run("Squeeze", {}, {u.t}, {s.t});
  expect_close(s.values(), x.values(), 0, 0);
  CHECK_THROWS_WITH_AS(run("Squeeze", {}, {x.t, I64({1}, {0}).t}, {s.t}),
                       doctest::Contains("cannot squeeze"), Error);
}

TEST_CASE("Concat, Split (input, attribute, equal)") {
  Buf a = F({2, 1}, {1, 2}), b = F({2, 2}, {3, 4, 5, 6}), y = Z({2, 3});
  run("Concat", {{"axis", int64_t{-1}}}, {a.t, b.t}, {y.t});
  expect_close(y.values(), {1, 3, 4, 2, 5, 6}, 0, 0);
  Buf p = Z({2, 1}), q = Z({2, 2});
  run("Split", {{"axis", int64_t{1}}}, {y.t, I64({2}, {1, 2}).t}, {p.t, q.t});
  expect_close(p.values(), a.values(), 0, 0);
  expect_close(q.values(), b.values(), 0, 0);
  run("Split", {{"axis", int64_t{1}}, {"split", Shape{1, 2}}}, {y.t}, {p.t, q.t});
  expect_close(q.values(), b.values(), 0, 0);
  Buf e = F({6}, {0, 1, 2, 3, 4, 5}), e1 = Z({2}), e2 = Z({2}), e3 = Z({2});
  run("Split", {}, {e.t}, {e1.t, e2.t, e3.t});
  expect_close(e3.values(), {4, 5}, 0, 0);
  CHECK_THROWS_WITH_AS(run("Split", {}, {e.t, I64({2}, {1, 2}).t}, {e1.t, e2.t}),
                       doctest::Contains("sum to 3"), Error);
}

TEST_CASE("Slice: negative starts, steps, clamping") {
  Buf x = F({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Buf y = Z({2, 2});
  run("Slice", {}, {x.t, I64({1}, {-1}).t, I64({1}, {-100}).t, I64({1}, {1}).t, I64({1}, {-3}).t},
      {y.t});
  expect_close(y.values(), {4, 1, 9, 6}, 0, 0);
  Buf z = Z({1, 3});
  run("Slice", {}, {x.t, I64({2}, {1, 2}).t, I64({2}, {1000, INT64_MAX}).t}, {z.t});
  expect_close(z.values(), {7, 8, 9}, 0, 0);
  Buf w = Z({2, 0});
  run("Slice", {}, {x.t, I64({1}, {3}).t, I64({1}, {1}).t, I64({1}, {1}).t}, {w.t});
  Buf v = Z({2, 5});
  run("Slice", {},
      {x.t, I64({1}, {INT64_MAX}).t, I64({1}, {INT64_MIN}).t, I64({1}, {1}).t, I64({1}, {-1}).t},
      {v.t});
  expect_close(v.values(), {4, 3, 2, 1, 0, 9, 8, 7, 6, 5}, 0, 0);
}

TEST_CASE("Pad constant, reflect, edge; Expand; Tile") {
  Buf x = F({1, 3}, {1, 2, 3});
  Buf y = Z({1, 7});
  run("Pad", {{"mode", std::string("constant")}}, {x.t, I64({4}, {0, 2, 0, 2}).t, F({}, {9}).t},
      {y.t});
  expect_close(y.values(), {9, 9, 1, 2, 3, 9, 9}, 0, 0);
  run("Pad", {{"mode", std::string("reflect")}}, {x.t, I64({4}, {0, 2, 0, 2}).t}, {y.t});
  expect_close(y.values(), {3, 2, 1, 2, 3, 2, 1}, 0, 0);
  run("Pad", {{"mode", std::string("edge")}}, {x.t, I64({4}, {0, 2, 0, 2}).t}, {y.t});
  expect_close(y.values(), {1, 1, 1, 2, 3, 3, 3}, 0, 0);
  Buf c = Z({1, 2});
  run("Pad", {}, {x.t, I64({4}, {0, -1, 0, 0}).t}, {c.t});
  expect_close(c.values(), {2, 3}, 0, 0);
  Buf e = Z({2, 1, 3});
  run("Expand", {}, {x.t, I64({3}, {2, 1, 1}).t}, {e.t});
  expect_close(e.values(), {1, 2, 3, 1, 2, 3}, 0, 0);
  Buf t = Z({2, 6});
  run("Tile", {}, {x.t, I64({2}, {2, 2}).t}, {t.t});
  expect_close(t.values(), {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}, 0, 0);
}

TEST_CASE("Range, ConstantOfShape, Shape, Gather") {
  Buf r(DType::kInt64, {4});
  run("Range", {}, {I64({}, {10}).t, I64({}, {2}).t, I64({}, {-2}).t}, {r.t});
  CHECK(r.t.as<int64_t>()[3] == 4);
  Buf rf = Z({3});
  run("Range", {}, {F({}, {0.5f}).t, F({}, {2}).t, F({}, {0.5f}).t}, {rf.t});
  expect_close(rf.values(), {0.5f, 1, 1.5f}, 0, 0);
  Buf c = Z({2, 2});
  run("ConstantOfShape", {{"value", 1.5}}, {I64({2}, {2, 2}).t}, {c.t});
  expect_close(c.values(), {1.5f, 1.5f, 1.5f, 1.5f}, 0, 0);
  Buf sh(DType::kInt64, {2});
  run("Shape", {{"start", int64_t{-2}}}, {c.t}, {sh.t});
  CHECK(sh.t.as<int64_t>()[0] == 2);
  Buf x = F({2, 3}, {0, 1, 2, 3, 4, 5});
  Buf g = Z({2, 2, 2});
  run("Gather", {{"axis", int64_t{1}}}, {x.t, I64({2, 2}, {2, -3, 1, 1}).t}, {g.t});
  expect_close(g.values(), {2, 0, 1, 1, 5, 3, 4, 4}, 0, 0);
  Buf g0 = Z({1, 3});
  run("Gather", {}, {x.t, I64({1}, {1}).t}, {g0.t});
  expect_close(g0.values(), {3, 4, 5}, 0, 0);
  CHECK_THROWS_WITH_AS(run("Gather", {}, {x.t, I64({1}, {2}).t}, {g0.t}),
                       doctest::Contains("index 2 is out of range"), Error);
}

TEST_CASE("Constant from value, value_floats, value_ints") {
  Buf a = Z({2, 2});
  run("Constant", {{"value", std::vector<double>{1, 2, 3, 4}}}, {}, {a.t});
  expect_close(a.values(), {1, 2, 3, 4}, 0, 0);
  Buf s = Z({});
  run("Constant", {{"value_float", 0.5}}, {}, {s.t});
  CHECK(s.f()[0] == 0.5f);
  Buf i(DType::kInt64, {2});
  run("Constant", {{"value_ints", Shape{INT64_MAX, -3}}}, {}, {i.t});
  CHECK(i.t.as<int64_t>()[0] == INT64_MAX);
  CHECK(i.t.as<int64_t>()[1] == -3);
  CHECK_THROWS_WITH_AS(run("Constant", {{"value_ints", Shape{1, 2, 3}}}, {}, {i.t}),
                       doctest::Contains("the value has 3 elements"), Error);
}

TEST_CASE("unknown operators and missing inputs fail with one clear line") {
  Buf x = F({1}, {1});
  CHECK_THROWS_WITH_AS(run("Rleu", {}, {x.t}, {x.t}),
                       "node 'n' (Rleu): no kernel for operator 'Rleu'; did you mean 'Relu'?",
                       Error);
  CHECK_THROWS_WITH_AS(run("Add", {}, {x.t}, {x.t}), "node 'n' (Add): required input 1 is missing",
                       Error);
  CHECK(planner::rt::has_kernel("ai.onnx", "Conv"));
  CHECK(planner::rt::has_kernel("ai.planner", "LSTMGradData"));
  CHECK(planner::rt::has_kernel("ai.planner", "LSTMGradWeights"));
  CHECK_FALSE(planner::rt::has_kernel("ai.planner", "LSTMGrad"));  // split in two
  CHECK_FALSE(planner::rt::has_kernel("ai.planner", "Grad"));
}
