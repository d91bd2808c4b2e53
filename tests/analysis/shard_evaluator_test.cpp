// Tests for ShardEvaluator (analysis/strategies.h): regions of k-way, multi-variable shards.
#include <string>

#include "analysis/strategies.h"
#include "tdl/parser.h"
#include "tests/test_util.h"

namespace planner::analysis {
namespace {

ShardEvaluator evaluator(const std::string& text, const std::map<std::string, int64_t>& sizes) {
  auto file = tdl::parse_file(text, "t.tdl");
  REQUIRE_MESSAGE(file.has_value(), (file ? std::string() : file.error().message()));
  auto inst = tdl::instantiate_standalone(file->ops[0], sizes);
  REQUIRE_MESSAGE(inst.has_value(), (inst ? std::string() : inst.error().message()));
  auto e = ShardEvaluator::create(*inst);
  REQUIRE_MESSAGE(e.has_value(), (e ? std::string() : e.error().message()));
  return std::move(*e);
}

ShardRegions eval(const ShardEvaluator& e,
                  const std::map<std::string, std::pair<int64_t, int64_t>>& r) {
  auto out = e.evaluate(r);
  REQUIRE_MESSAGE(out.has_value(), (out ? std::string() : out.error().message()));
  return std::move(*out);
}

const char* kMatMul = "op MatMul(A[M, K], B[K, N]) -> C[m, n] = sum(k: A[m, k] * B[k, n])";
const char* kConv1d =
    "op Conv1d(data[B, CI, X], filters[CI, CO, DX]) -> out[b, co, x] =\n"
    "    sum(ci, dx: data[b, ci, x + dx] * filters[ci, co, dx])";

TEST_CASE("a MatMul shard of a 4 x 2 grid over m and n") {
  ShardEvaluator e = evaluator(kMatMul, {{"M", 64}, {"K", 32}, {"N", 16}});
  CHECK(e.extent("m") == 64);
  CHECK(e.extent("k") == 32);
  ShardRegions r = eval(e, {{"m", {16, 31}}, {"n", {8, 15}}});
  CHECK(r.inputs[0] == Box{{16, 32}, {0, 32}});
  CHECK(r.inputs[1] == Box{{0, 32}, {8, 16}});
  CHECK(r.outputs[0] == Box{{16, 32}, {8, 16}});
}

TEST_CASE("a reduction shard computes the whole output from half the operands") {
  ShardEvaluator e = evaluator(kMatMul, {{"M", 64}, {"K", 32}, {"N", 16}});
  ShardRegions r = eval(e, {{"k", {0, 15}}});
  CHECK(r.inputs[0] == Box{{0, 64}, {0, 16}});
  CHECK(r.inputs[1] == Box{{0, 16}, {0, 16}});
  CHECK(r.outputs[0] == Box{{0, 64}, {0, 16}});
}

TEST_CASE("a three-way split of a convolution's width keeps the halos") {
  ShardEvaluator e = evaluator(kConv1d, {{"B", 8}, {"CI", 4}, {"X", 32}, {"CO", 16}, {"DX", 3}});
  CHECK(e.extent("x") == 30);
  ShardRegions r = eval(e, {{"x", {10, 19}}});
  CHECK(r.inputs[0] == Box{{0, 8}, {0, 4}, {10, 22}});  // x 10..19 reads 10..21
  CHECK(r.inputs[1] == Box{{0, 4}, {0, 16}, {0, 3}});
  CHECK(r.outputs[0] == Box{{0, 8}, {0, 16}, {10, 20}});
}

TEST_CASE("an unknown variable is an error") {
  ShardEvaluator e = evaluator(kMatMul, {{"M", 4}, {"K", 4}, {"N", 4}});
  CHECK_FALSE(e.evaluate({{"q", {0, 1}}}).has_value());
}

}  // namespace
}  // namespace planner::analysis
