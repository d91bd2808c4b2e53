// Tests for ir/op_stats.cpp: FLOP and byte counts.
#include "ir/op_stats.h"

#include <doctest/doctest.h>

namespace planner::ir {
namespace {

TEST_CASE("MatMul, Conv and element-wise FLOPs") {
  Graph g;
  auto add = [&](const char* n, std::vector<int64_t> s, TensorRole r = TensorRole::kActivation) {
    Tensor t;
    t.name = n;
    t.shape = std::move(s);
    t.role = r;
    return g.add_tensor(std::move(t));
  };
  TensorId a = add("a", {64, 128}, TensorRole::kInput);
  TensorId b = add("b", {128, 32}, TensorRole::kParameter);
  TensorId c = add("c", {64, 32});
  TensorId x = add("x", {2, 3, 8, 8}, TensorRole::kInput);
  TensorId w = add("w", {4, 3, 3, 3}, TensorRole::kParameter);
  TensorId y = add("y", {2, 4, 6, 6});
  TensorId z = add("z", {2, 4, 6, 6});
  g.add_op(Op{"mm", "MatMul", "", {}, {a, b}, {c}});
  g.add_op(Op{"conv", "Conv", "", {}, {x, w}, {y}});
  g.add_op(Op{"relu", "Relu", "", {}, {y}, {z}});
  g.inputs = {a, x};
  g.outputs = {c, z};
  REQUIRE(g.finalize());

  CHECK(op_stats(g, 0).flops == doctest::Approx(2.0 * 64 * 128 * 32));
  CHECK(op_stats(g, 0).bytes_read == (64 * 128 + 128 * 32) * 4);
  CHECK(op_stats(g, 0).bytes_written == 64 * 32 * 4);
  CHECK(op_stats(g, 1).flops == doctest::Approx(2.0 * (2 * 4 * 6 * 6) * (3 * 3 * 3)));
  CHECK(op_stats(g, 2).flops == doctest::Approx(2 * 4 * 6 * 6));

  GraphStats s = graph_stats(g);
  CHECK(s.parameter_count == 128 * 32 + 4 * 3 * 3 * 3);
  CHECK(s.parameter_bytes == s.parameter_count * 4);
  CHECK(s.op_counts.at("MatMul") == 1);
  CHECK(s.activation_bytes == (64 * 32 + 2 * 2 * 4 * 6 * 6) * 4);
}

}  // namespace
}  // namespace planner::ir
