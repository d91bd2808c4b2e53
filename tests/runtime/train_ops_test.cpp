// Training-mode batch norm (BatchNormStats, BatchNormTrain, BatchNormRunningStats and the two
// gradients), DropoutTrain / DropoutGrad, and the row GEMMs MatMulTransB / MatMulGradWeight
// against hand-computed references, central differences, and their shards' results.
#include <algorithm>

#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::Error;

namespace {

// Per channel of x [N, C, ...]: population mean and variance, in double.
void channel_moments(const Buf& x, const Shape& s, std::vector<double>& mean,
                     std::vector<double>& var) {
  const int64_t c = s[1], inner = x.n() / (s[0] * c);
  mean.assign(static_cast<size_t>(c), 0.0);
  var.assign(static_cast<size_t>(c), 0.0);
  const double count = static_cast<double>(s[0] * inner);
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inner; ++i)
        mean[static_cast<size_t>(ch)] += x.f()[(n * c + ch) * inner + i] / count;
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inner; ++i) {
        const double d = x.f()[(n * c + ch) * inner + i] - mean[static_cast<size_t>(ch)];
        var[static_cast<size_t>(ch)] += d * d / count;
      }
}

// The training-mode forward pass: stats, then the normalisation.
std::vector<float> bn_train_forward(const Buf& x, const Buf& scale, const Buf& bias, Shape s,
                                    double eps) {
  int64_t count = 1;
  for (size_t d = 0; d < s.size(); ++d)
    if (d != 1) count *= s[d];
  Buf stats = Z({2, s[1]}), y = Z(s);
  run_planner("BatchNormStats", {{"count", count}}, {x.t}, {stats.t});
  run_planner("BatchNormTrain", {{"epsilon", eps}}, {x.t, scale.t, bias.t, stats.t}, {y.t});
  return y.values();
}

}  // namespace

TEST_CASE("BatchNormStats and BatchNormTrain: batch statistics, exact per channel") {
  const Shape s = {3, 2, 2, 2};
  Buf x = R(s, 11, -2, 3), scale = F({2}, {1.5f, -0.5f}), bias = F({2}, {0.25f, 2});
  Buf stats = Z({2, 2});
  run_planner("BatchNormStats", {{"count", int64_t{12}}}, {x.t}, {stats.t});
  std::vector<double> mean, var;
  channel_moments(x, s, mean, var);
  expect_close(stats.values(),
               {static_cast<float>(mean[0]), static_cast<float>(mean[1]),
                static_cast<float>(var[0] + mean[0] * mean[0]),
                static_cast<float>(var[1] + mean[1] * mean[1])},
               1e-6, 1e-6);
  const double eps = 1e-3;
  std::vector<float> y = bn_train_forward(x, scale, bias, s, eps), want(y.size());
  for (int64_t i = 0; i < x.n(); ++i) {
    const size_t ch = static_cast<size_t>((i / 4) % 2);
    want[static_cast<size_t>(i)] = static_cast<float>(
        (x.f()[i] - mean[ch]) / std::sqrt(var[ch] + eps) * scale.f()[ch] + bias.f()[ch]);
  }
  expect_close(y, want, 1e-5, 1e-5);

  // Shards along the batch: partial sums with the whole count add up to the statistics.
  Buf lo = F({1, 2, 2, 2}, std::vector<float>(x.f(), x.f() + 8)),
      hi = F({2, 2, 2, 2}, std::vector<float>(x.f() + 8, x.f() + 24));
  Buf s_lo = Z({2, 2}), s_hi = Z({2, 2});
  run_planner("BatchNormStats", {{"count", int64_t{12}}}, {lo.t}, {s_lo.t});
  run_planner("BatchNormStats", {{"count", int64_t{12}}}, {hi.t}, {s_hi.t});
  std::vector<float> sum(4);
  for (size_t i = 0; i < 4; ++i) sum[i] = s_lo.f()[i] + s_hi.f()[i];
  expect_close(sum, stats.values(), 1e-6, 1e-6);

  CHECK_THROWS_WITH_AS(run_planner("BatchNormStats", {}, {x.t}, {stats.t}),
                       doctest::Contains("attribute count must be positive"), Error);
  CHECK_THROWS_WITH_AS(
      run_planner("BatchNormTrain", {}, {x.t, scale.t, bias.t, Z({2, 3}).t}, {Z(s).t}),
      doctest::Contains("stats has shape [2,3], expected [2, 2]"), Error);
}

TEST_CASE("BatchNormTrainParamGrad and BatchNormTrainGrad against central differences") {
  for (Shape s : {Shape{2, 3, 2, 2}, Shape{5, 3}}) {
    INFO("shape rank " << s.size());
    int64_t count = 1;
    for (size_t d = 0; d < s.size(); ++d)
      if (d != 1) count *= s[d];
    const double eps = 1e-3;
    Buf x = R(s, 21, -1, 2), scale = R({3}, 22, 0.5, 1.5), bias = R({3}, 23), dy = R(s, 24);
    Buf stats = Z({2, 3}), ds = Z({3}), db = Z({3}), dx = Z(s);
    run_planner("BatchNormStats", {{"count", count}}, {x.t}, {stats.t});
    run_planner("BatchNormTrainParamGrad", {{"epsilon", eps}}, {dy.t, x.t, stats.t}, {ds.t, db.t});
    run_planner("BatchNormTrainGrad", {{"epsilon", eps}, {"count", count}},
                {dy.t, x.t, scale.t, stats.t, ds.t, db.t}, {dx.t});
    auto f = [&] { return bn_train_forward(x, scale, bias, s, eps); };
    // dX includes the path through the batch statistics: without it the check fails.
    check_grad(f, x, dy.values(), dx.values(), 1e-3, 2e-3, 2e-2);
    check_grad(f, scale, dy.values(), ds.values(), 1e-3);
    check_grad(f, bias, dy.values(), db.values(), 1e-3);
  }
}

TEST_CASE("BatchNormRunningStats: ONNX's momentum update and the saved batch statistics") {
  Buf stats = F({2, 2}, {1, -2, 3, 5}), mean = F({2}, {0.5f, 1}), var = F({2}, {2, 4});
  Buf rm = Z({2}), rv = Z({2}), sm = Z({2}), sv = Z({2});
  run_planner("BatchNormRunningStats", {{"momentum", 0.75}}, {stats.t, mean.t, var.t},
              {rm.t, rv.t, sm.t, sv.t});
  // batch mean (1, -2), variance E[x^2] - mean^2 = (2, 1)
  expect_close(rm.values(), {0.5f * 0.75f + 1 * 0.25f, 1 * 0.75f - 2 * 0.25f});
  expect_close(rv.values(), {2 * 0.75f + 2 * 0.25f, 4 * 0.75f + 1 * 0.25f});
  expect_close(sm.values(), {1, -2});
  expect_close(sv.values(), {2, 1});
}

TEST_CASE("DropoutTrain: a counter-based mask, the same in shards as whole") {
  const Shape s = {4, 6};
  Buf x = R(s, 31), y = Z(s), m = Z(s, DType::kBool);
  Attributes a = {{"ratio", 0.25}, {"seed", int64_t{12345}}};
  run_planner("DropoutTrain", a, {x.t}, {y.t, m.t});
  for (int64_t i = 0; i < x.n(); ++i) {
    const bool keep = m.t.as<bool>()[i];
    CHECK(y.f()[i] == (keep ? x.f()[i] * (1.0f / 0.75f) : 0.0f));
  }
  // A pinned draw: the mask is a function of (seed, index) only, never of rank or time.
  std::string bits;
  for (int64_t i = 0; i < 12; ++i) bits += m.t.as<bool>()[i] ? '1' : '0';
  CHECK(bits == "000011011101");

  // Shards of rows 1..2 and columns 3..5 draw the whole op's elements.
  Buf part = Z({2, 3}), ypart = Z({2, 3}), mpart = Z({2, 3}, DType::kBool);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) part.f()[r * 3 + c] = x.f()[(r + 1) * 6 + c + 3];
  Attributes sa = a;
  sa["shard_offset"] = std::vector<int64_t>{1, 3};
  sa["full_shape"] = std::vector<int64_t>{4, 6};
  run_planner("DropoutTrain", sa, {part.t}, {ypart.t, mpart.t});
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      CHECK(mpart.t.as<bool>()[r * 3 + c] == m.t.as<bool>()[(r + 1) * 6 + c + 3]);
      CHECK(ypart.f()[r * 3 + c] == y.f()[(r + 1) * 6 + c + 3]);
    }
  sa["shard_offset"] = std::vector<int64_t>{3, 3};
  CHECK_THROWS_WITH_AS(run_planner("DropoutTrain", sa, {part.t}, {ypart.t, mpart.t}),
                       doctest::Contains("outside full_shape"), Error);

  // The drop rate is the ratio; another seed draws another mask.
  Buf big = R({100, 100}, 32), yb = Z({100, 100}), mb = Z({100, 100}, DType::kBool),
      mc = Z({100, 100}, DType::kBool);
  run_planner("DropoutTrain", {{"ratio", 0.1}, {"seed", int64_t{7}}}, {big.t}, {yb.t, mb.t});
  int64_t dropped = 0, differ = 0;
  run_planner("DropoutTrain", {{"ratio", 0.1}, {"seed", int64_t{8}}}, {big.t}, {yb.t, mc.t});
  for (int64_t i = 0; i < big.n(); ++i) {
    dropped += !mb.t.as<bool>()[i];
    differ += mb.t.as<bool>()[i] != mc.t.as<bool>()[i];
  }
  CHECK(dropped > 900);
  CHECK(dropped < 1100);
  CHECK(differ > 1000);
}

TEST_CASE("DropoutGrad: the mask over (1 - ratio)") {
  Buf dy = F({2, 2}, {1, 2, 3, 4}), m = Bools({2, 2}, {1, 0, 0, 1}), dx = Z({2, 2});
  run_planner("DropoutGrad", {{"ratio", 0.5}}, {dy.t, m.t}, {dx.t});
  expect_close(dx.values(), {2, 0, 0, 8});
  CHECK_THROWS_WITH_AS(run_planner("DropoutGrad", {{"ratio", 1.0}}, {dy.t, m.t}, {dx.t}),
                       doctest::Contains("ratio must be in [0, 1)"), Error);
}

TEST_CASE("MatMulTransB and MatMulGradWeight: GEMMs over rows with leading dimensions") {
  // A [2, 3, 4] (rows 2 x 3), B [5, 4]: Y = A B^T; dW = A^T dY summed over every row.
  Buf a = R({2, 3, 4}, 51), b = R({5, 4}, 52), y = Z({2, 3, 5}), dy = R({2, 3, 5}, 53),
      dw = Z({4, 5});
  run_planner("MatMulTransB", {}, {a.t, b.t}, {y.t});
  run_planner("MatMulGradWeight", {}, {a.t, dy.t}, {dw.t});
  std::vector<float> want_y(30, 0.0f), want_dw(20, 0.0f);
  for (int r = 0; r < 6; ++r)
    for (int n = 0; n < 5; ++n) {
      double acc = 0;
      for (int k = 0; k < 4; ++k) acc += static_cast<double>(a.f()[r * 4 + k]) * b.f()[n * 4 + k];
      want_y[static_cast<size_t>(r * 5 + n)] = static_cast<float>(acc);
    }
  for (int k = 0; k < 4; ++k)
    for (int n = 0; n < 5; ++n) {
      double acc = 0;
      for (int r = 0; r < 6; ++r) acc += static_cast<double>(a.f()[r * 4 + k]) * dy.f()[r * 5 + n];
      want_dw[static_cast<size_t>(k * 5 + n)] = static_cast<float>(acc);
    }
  expect_close(y.values(), want_y);
  expect_close(dw.values(), want_dw);
  CHECK_THROWS_WITH_AS(run_planner("MatMulTransB", {}, {a.t, Z({5, 3}).t}, {y.t}),
                       doctest::Contains("do not multiply as A B^T"), Error);
  CHECK_THROWS_WITH_AS(run_planner("MatMulGradWeight", {}, {a.t, Z({3, 2, 5}).t}, {dw.t}),
                       doctest::Contains("must share their leading dimensions"), Error);
}
