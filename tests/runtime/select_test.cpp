// ArgMax, ArgMin and Trilu (select_math.h, the bodies both backends run) by hand: axes, keepdims,
// select_last_index, ties and NaN; Trilu's upper and lower triangles with positive and negative
// k over a batch of matrices.
#include <cmath>

#include "rt_test_util.h"

using namespace rt_test;

namespace {

std::vector<int64_t> ints(const Buf& b) {
  return std::vector<int64_t>(b.t.as<int64_t>(), b.t.as<int64_t>() + b.n());
}

}  // namespace

TEST_CASE("ArgMax and ArgMin: axes, keepdims, ties and select_last_index") {
  // [2, 3]: rows {1, 5, 5}, {7, -2, 7}
  Buf x = F({2, 3}, {1, 5, 5, 7, -2, 7});
  Buf y = Z({2, 1}, DType::kInt64);
  run("ArgMax", {{"axis", int64_t{1}}}, {x.t}, {y.t});
  CHECK(ints(y) == std::vector<int64_t>{1, 0});  // first maximum
  run("ArgMax", {{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}}, {x.t}, {y.t});
  CHECK(ints(y) == std::vector<int64_t>{2, 2});  // last maximum
  Buf y0 = Z({3}, DType::kInt64);
  run("ArgMin", {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}, {x.t}, {y0.t});
  CHECK(ints(y0) == std::vector<int64_t>{0, 1, 0});
  // NaN is the extreme of both (numpy's rule): the first one, or the last with
  // select_last_index.
  Buf n = F({1, 4}, {1, NAN, 3, NAN});
  Buf yn = Z({1}, DType::kInt64);
  run("ArgMax", {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}, {n.t}, {yn.t});
  CHECK(ints(yn)[0] == 1);
  run("ArgMin", {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}, {"select_last_index", int64_t{1}}},
      {n.t}, {yn.t});
  CHECK(ints(yn)[0] == 3);
  Buf xi = I64({4}, {3, 9, -1, 9});
  Buf ys = Z({}, DType::kInt64);
  run("ArgMax", {{"keepdims", int64_t{0}}}, {xi.t}, {ys.t});
  CHECK(ints(ys)[0] == 1);
  Buf wrong = Z({2, 3}, DType::kInt64);
  CHECK_THROWS_WITH_AS(run("ArgMax", {{"axis", int64_t{1}}}, {x.t}, {wrong.t}),
                       doctest::Contains("[2,1]"), planner::rt::Error);
}

TEST_CASE("Trilu: upper and lower triangles, k positive and negative, batched") {
  Buf x(DType::kFloat32, {2, 3, 4});
  for (int64_t i = 0; i < x.n(); ++i) x.f()[i] = static_cast<float>(i + 1);
  for (int64_t upper : {int64_t{0}, int64_t{1}})
    for (int64_t k : {int64_t{-1}, int64_t{0}, int64_t{2}}) {
      CAPTURE(upper);
      CAPTURE(k);
      Buf y = Z({2, 3, 4});
      run("Trilu", {{"upper", upper}}, {x.t, I64({}, {k}).t}, {y.t});
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t m = 0; m < 3; ++m)
          for (int64_t c = 0; c < 4; ++c) {
            const int64_t i = (b * 3 + m) * 4 + c;
            const bool keep = upper ? c - m >= k : c - m <= k;  // numpy's triu / tril
            CHECK(y.f()[i] == (keep ? x.f()[i] : 0.0f));
          }
    }
}
