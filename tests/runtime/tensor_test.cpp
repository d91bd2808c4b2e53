// Tensor views, dtypes and the counting allocator.
#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::Allocator;
using planner::rt::TensorBuffer;

TEST_CASE("the allocator counts current and peak bytes") {
  Allocator alloc;
  {
    TensorBuffer a(alloc, DType::kFloat32, {10, 10});
    CHECK(alloc.current_bytes() == 400);
    {
      TensorBuffer b(alloc, DType::kInt64, {3});
      CHECK(alloc.current_bytes() == 424);
      CHECK(b.as<int64_t>()[2] == 0);  // zero-filled
    }
    CHECK(alloc.current_bytes() == 400);
    TensorBuffer moved = std::move(a);
    CHECK(alloc.current_bytes() == 400);
    CHECK(moved.view().shape == Shape{10, 10});
  }
  CHECK(alloc.current_bytes() == 0);
  CHECK(alloc.peak_bytes() == 424);
  alloc.reset_peak();
  CHECK(alloc.peak_bytes() == 0);
}

TEST_CASE("dtypes and views") {
  CHECK(planner::rt::dtype_name(DType::kBool) == "bool");
  CHECK(planner::rt::dtype_from_name("i64") == DType::kInt64);
  CHECK_THROWS_AS(planner::rt::dtype_from_name("q7"), planner::rt::Error);
  Buf b = Z({2, 3});
  CHECK(b.t.bytes() == 24);
  CHECK_THROWS_WITH_AS(b.t.as<int64_t>(), "tensor of type f32 used as i64", planner::rt::Error);
  CHECK_FALSE(Tensor().present());
  CHECK(planner::rt::shape_to_string({}) == "[]");
}
