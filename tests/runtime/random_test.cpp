// The seeded initialiser: slices equal the slice of the whole, values pinned across platforms.
#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::fill_uniform;

TEST_CASE("a region initialises exactly the values of that slice of the whole tensor") {
  Buf whole = Z({4, 6, 5});
  fill_uniform(whole.t, 42, "layer1.weight", -0.5, 0.5);
  Buf part = Z({2, 3, 5});
  fill_uniform(part.t, 42, "layer1.weight", {4, 6, 5}, {1, 2, 0}, -0.5, 0.5);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 5; ++c)
        CHECK(part.f()[(a * 3 + b) * 5 + c] == whole.f()[((a + 1) * 6 + b + 2) * 5 + c]);
  for (float v : whole.values()) CHECK((v >= -0.5f && v < 0.5f));
}

TEST_CASE("values depend on seed and name, and are pinned") {
  Buf a = Z({8}), b = Z({8}), c = Z({8});
  fill_uniform(a.t, 1, "w");
  fill_uniform(b.t, 2, "w");
  fill_uniform(c.t, 1, "v");
  CHECK(a.values() != b.values());
  CHECK(a.values() != c.values());
  // Pinned: splitmix64 and FNV-1a in integer arithmetic, then one exact multiply-add.
  CHECK(planner::rt::name_hash("") == 0xcbf29ce484222325ull);
  CHECK(planner::rt::name_hash("a") == 0xaf63dc4c8601ec8cull);
  const double u = planner::rt::uniform01(1, "w", 0);
  CHECK(a.f()[0] == static_cast<float>(-1.0 + 2.0 * u));
  CHECK(u * 16777216.0 == std::floor(u * 16777216.0));
}

TEST_CASE("integer and bool fills; bad regions throw") {
  Buf ids(DType::kInt64, {1000});
  fill_uniform(ids.t, 7, "input_ids", 0, 10);
  int64_t lo = 100, hi = -1;
  for (int64_t i = 0; i < 1000; ++i)
    lo = std::min(lo, ids.t.as<int64_t>()[i]), hi = std::max(hi, ids.t.as<int64_t>()[i]);
  CHECK(lo == 0);
  CHECK(hi == 9);
  Buf part = Z({3, 3});
  CHECK_THROWS_AS(fill_uniform(part.t, 1, "x", {4, 4}, {2, 0}), planner::rt::Error);
}
