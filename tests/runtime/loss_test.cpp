// GatherElements, NegativeLogLikelihoodLoss and its gradient (loss.cpp) by hand: axes and
// negative indices; every reduction, class weights and ignore_index; the gradient against a
// finite difference of the loss.
#include <cmath>

#include "rt_test_util.h"

using namespace rt_test;

TEST_CASE("GatherElements: along each axis, negative indices, indices smaller than the data") {
  Buf x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  Buf y = Z({2, 2});
  run("GatherElements", {{"axis", int64_t{1}}}, {x.t, I64({2, 2}, {2, 0, -1, 1}).t}, {y.t});
  CHECK(std::vector<float>(y.f(), y.f() + 4) == std::vector<float>{3, 1, 6, 5});
  Buf y0 = Z({1, 3});
  run("GatherElements", {}, {x.t, I64({1, 3}, {1, 0, 1}).t}, {y0.t});
  CHECK(std::vector<float>(y0.f(), y0.f() + 3) == std::vector<float>{4, 2, 6});
  CHECK_THROWS_WITH_AS(
      run("GatherElements", {{"axis", int64_t{1}}}, {x.t, I64({2, 2}, {3, 0, 0, 0}).t}, {y.t}),
      doctest::Contains("out of range"), planner::rt::Error);
}

namespace {

// The NLL loss of log-probabilities `x` ([2, 3, 2]: N = 2, C = 3, d = 2) with `attrs`.
std::vector<float> nll(const Attributes& attrs, const std::vector<float>& x, Shape out,
                       bool weighted) {
  Buf in = F({2, 3, 2}, x);
  Buf target = I64({2, 2}, {0, 2, 1, 1});
  Buf w = F({3}, {0.5, 1, 2});
  Buf y = Z(out);
  std::vector<Tensor> ins = {in.t, target.t};
  if (weighted) ins.push_back(w.t);
  run("NegativeLogLikelihoodLoss", attrs, ins, {y.t});
  return std::vector<float>(y.f(), y.f() + y.n());
}

}  // namespace

TEST_CASE("NegativeLogLikelihoodLoss: none, sum, mean, weights, ignore_index") {
  std::vector<float> x(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -0.1f * static_cast<float>(i + 1);
  // x[n, c, d] = x[(n * 3 + c) * 2 + d]; targets (0, 2), (1, 1): picks x[0], x[5], x[8], x[9].
  const std::vector<float> picked = {0.1f, 0.6f, 0.9f, 1.0f};
  auto none = nll({{"reduction", std::string("none")}}, x, {2, 2}, false);
  for (size_t i = 0; i < 4; ++i) CHECK(none[i] == doctest::Approx(picked[i]));
  CHECK(nll({{"reduction", std::string("sum")}}, x, {}, false)[0] == doctest::Approx(2.6));
  CHECK(nll({}, x, {}, false)[0] == doctest::Approx(2.6 / 4));  // mean by default
  // Weights 0.5, 1, 2 of classes 0, 2, 1, 1: a mean over the weights counted.
  const double weighted = 0.5 * 0.1 + 2 * 0.6 + 1 * 0.9 + 1 * 1.0;
  CHECK(nll({}, x, {}, true)[0] == doctest::Approx(weighted / 4.5));
  // ignore_index 1 drops the last two.
  CHECK(nll({{"ignore_index", int64_t{1}}}, x, {}, true)[0] ==
        doctest::Approx((0.5 * 0.1 + 2 * 0.6) / 2.5));
}

TEST_CASE("NLLLossGrad is the derivative of the loss") {
  std::vector<float> x(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -0.1f * static_cast<float>(i + 1);
  for (const char* reduction : {"none", "sum", "mean"}) {
    CAPTURE(reduction);
    const Attributes attrs = {{"reduction", std::string(reduction)}, {"ignore_index", int64_t{2}}};
    const bool none = std::string(reduction) == "none";
    Buf dy = none ? F({2, 2}, {1, 1, 1, 1}) : F({}, {1});  // d(sum of the outputs)
    Buf dx = Z({2, 3, 2});
    run_planner("NLLLossGrad", attrs, {dy.t, I64({2, 2}, {0, 2, 1, 1}).t, F({3}, {0.5, 1, 2}).t},
                {dx.t});
    for (size_t i = 0; i < x.size(); ++i) {
      std::vector<float> up = x, down = x;
      up[i] += 1e-2f;
      down[i] -= 1e-2f;
      auto total = [&](const std::vector<float>& v) {
        double s = 0;
        for (float l : nll(attrs, v, none ? Shape{2, 2} : Shape{}, true)) s += l;
        return s;
      };
      CHECK(dx.f()[i] == doctest::Approx((total(up) - total(down)) / 2e-2).epsilon(1e-3));
    }
  }
}

TEST_CASE("GatherElementsGrad adds each gradient where GatherElements took it") {
  // Forward: y[i, j] = x[i, idx[i, j]] over x [2, 3]; repeated indices add up.
  Buf dy = F({2, 2}, {1, 2, 3, 4});
  Buf idx = I64({2, 2}, {2, 2, 0, 1});
  Buf x = Z({2, 3});
  Buf dx = Z({2, 3});
  for (int64_t k = 0; k < dx.n(); ++k) dx.f()[k] = 9.0f;  // every element is written
  run_planner("GatherElementsGrad", {{"axis", int64_t{1}}}, {dy.t, idx.t, x.t}, {dx.t});
  CHECK(std::vector<float>(dx.f(), dx.f() + 6) == std::vector<float>{0, 0, 3, 3, 4, 0});
  // Along axis 0 of [3, 2], indices [2, 2].
  Buf dy0 = F({2, 2}, {1, 2, 3, 4});
  Buf x0 = Z({3, 2});
  Buf dx0 = Z({3, 2});
  run_planner("GatherElementsGrad", {}, {dy0.t, I64({2, 2}, {2, 0, 2, -1}).t, x0.t}, {dx0.t});
  CHECK(std::vector<float>(dx0.f(), dx0.f() + 6) == std::vector<float>{0, 2, 0, 0, 4, 4});
}
