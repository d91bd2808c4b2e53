// ArgMax, ArgMin, Trilu, TopK (and its gradient), CumSum and OneHot (select_math.h, the bodies
// both backends run) by hand: axes, keepdims, select_last_index, ties and NaN; Trilu's upper and
// lower triangles with positive and negative k over a batch of matrices; TopK's order, CumSum's
// four forms, OneHot's index rules.
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

TEST_CASE("TopK: largest and smallest, ties to the lower index, NaN first, other axes") {
  // [2, 4]: rows {3, 1, 3, 2}, {0, NaN, 5, -1}
  Buf x = F({2, 4}, {3, 1, 3, 2, 0, NAN, 5, -1});
  Buf v = Z({2, 2});
  Buf i = Z({2, 2}, DType::kInt64);
  run("TopK", {}, {x.t, I64({1}, {2}).t}, {v.t, i.t});
  CHECK(ints(i) == std::vector<int64_t>{0, 2, 1, 2});  // equal 3s by index; NaN the largest
  CHECK(v.f()[0] == 3.0f);
  CHECK(v.f()[1] == 3.0f);
  CHECK(std::isnan(v.f()[2]));
  CHECK(v.f()[3] == 5.0f);
  run("TopK", {{"largest", int64_t{0}}}, {x.t, I64({1}, {2}).t}, {v.t, i.t});
  CHECK(ints(i) == std::vector<int64_t>{1, 3, 3, 0});
  CHECK(v.f()[0] == 1.0f);
  CHECK(v.f()[1] == 2.0f);
  CHECK(v.f()[2] == -1.0f);
  CHECK(v.f()[3] == 0.0f);
  // Along axis 0 of [3, 2]: each column's largest.
  Buf c = F({3, 2}, {1, 6, 4, 5, 2, 7});
  Buf cv = Z({1, 2});
  Buf ci = Z({1, 2}, DType::kInt64);
  run("TopK", {{"axis", int64_t{0}}}, {c.t, I64({1}, {1}).t}, {cv.t, ci.t});
  CHECK(ints(ci) == std::vector<int64_t>{1, 2});
  CHECK(cv.f()[0] == 4.0f);
  CHECK(cv.f()[1] == 7.0f);
  Buf too_many = Z({2, 5});
  Buf too_many_i = Z({2, 5}, DType::kInt64);
  CHECK_THROWS_WITH_AS(run("TopK", {}, {x.t, I64({1}, {5}).t}, {too_many.t, too_many_i.t}),
                       doctest::Contains("outside [0, 4]"), planner::rt::Error);
}

TEST_CASE("TopKGrad adds each value's gradient where TopK took it") {
  Buf dv = F({2, 2}, {0.5f, -1.0f, 2.0f, 3.0f});
  Buf idx = I64({2, 2}, {3, 0, 1, 2});
  Buf dx = Z({2, 4});
  for (int64_t k = 0; k < dx.n(); ++k) dx.f()[k] = 9.0f;  // every element is written
  run("TopKGrad", {{"axis", int64_t{-1}}}, {dv.t, idx.t}, {dx.t}, "ai.planner");
  const std::vector<float> want = {-1, 0, 0, 0.5f, 0, 2, 3, 0};
  for (int64_t k = 0; k < dx.n(); ++k) CHECK(dx.f()[k] == want[static_cast<size_t>(k)]);
}

TEST_CASE("CumSum: inclusive, exclusive, reverse, along an inner axis") {
  Buf x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  Buf y = Z({2, 3});
  const std::vector<std::pair<Attributes, std::vector<float>>> cases = {
      {{}, {1, 3, 6, 4, 9, 15}},
      {{{"exclusive", int64_t{1}}}, {0, 1, 3, 0, 4, 9}},
      {{{"reverse", int64_t{1}}}, {6, 5, 3, 15, 11, 6}},
      {{{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}}, {5, 3, 0, 11, 6, 0}}};
  for (const auto& [attrs, want] : cases) {
    run("CumSum", attrs, {x.t, I64({}, {1}).t}, {y.t});
    for (int64_t k = 0; k < y.n(); ++k) CHECK(y.f()[k] == want[static_cast<size_t>(k)]);
  }
  run("CumSum", {}, {x.t, I64({}, {0}).t}, {y.t});  // down the columns
  const std::vector<float> cols = {1, 2, 3, 5, 7, 9};
  for (int64_t k = 0; k < y.n(); ++k) CHECK(y.f()[k] == cols[static_cast<size_t>(k)]);
}

TEST_CASE("OneHot: the on value at each index, negative indices from the end, out of range off") {
  Buf idx = I64({3}, {0, -1, 7});
  Buf values = F({2}, {-1, 5});
  Buf y = Z({3, 4});
  run("OneHot", {}, {idx.t, I64({}, {4}).t, values.t}, {y.t});
  const std::vector<float> want = {5, -1, -1, -1, -1, -1, -1, 5, -1, -1, -1, -1};
  for (int64_t k = 0; k < y.n(); ++k) CHECK(y.f()[k] == want[static_cast<size_t>(k)]);
}
