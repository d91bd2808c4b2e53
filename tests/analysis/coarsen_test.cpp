// Tests for analysis/coarsen.cpp: groups, element-wise merging, repeated blocks.
#include "analysis/coarsen.h"

#include <set>

#include <doctest/doctest.h>

#include "analysis/training_graph.h"

namespace planner::analysis {
namespace {

using ir::Graph;
using ir::TensorId;
using ir::TensorRole;

// input -> [stem Gemm] -> L x (MatMul -> Relu -> Sigmoid) -> head Gemm
Graph layered(int layers) {
  Graph g;
  g.name = "layers";
  auto add = [&](const std::string& n, std::vector<int64_t> s, TensorRole r) {
    ir::Tensor t;
    t.name = n;
    t.shape = std::move(s);
    t.role = r;
    return g.add_tensor(std::move(t));
  };
  auto op = [&](const std::string& n, const std::string& type, std::vector<TensorId> ins,
                TensorId out) {
    ir::Op o;
    o.name = n;
    o.op_type = type;
    o.inputs = std::move(ins);
    o.outputs = {out};
    g.add_op(std::move(o));
  };
  TensorId x = add("x", {16, 32}, TensorRole::kInput);
  TensorId h = add("h0", {16, 64}, TensorRole::kActivation);
  op("stem", "Gemm", {x, add("ws", {32, 64}, TensorRole::kParameter)}, h);
  for (int l = 0; l < layers; ++l) {
    std::string p = "l" + std::to_string(l);
    TensorId m = add(p + "/m", {16, 64}, TensorRole::kActivation);
    TensorId r = add(p + "/r", {16, 64}, TensorRole::kActivation);
    TensorId s = add(p + "/s", {16, 64}, TensorRole::kActivation);
    op(p + "/mm", "MatMul", {h, add(p + "/w", {64, 64}, TensorRole::kParameter)}, m);
    op(p + "/relu", "Relu", {m}, r);
    op(p + "/sig", "Sigmoid", {r}, s);
    h = s;
  }
  TensorId y = add("y", {16, 10}, TensorRole::kActivation);
  op("head", "Gemm", {h, add("wh", {64, 10}, TensorRole::kParameter)}, y);
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize());
  return g;
}

bool elementwise(const Graph& g, ir::OpId id) {
  const std::string& t = g.op(id).op_type;
  return t == "Relu" || t == "Sigmoid";
}

std::vector<ir::OpId> identity(const Graph& g) {
  std::vector<ir::OpId> v(static_cast<size_t>(g.num_ops()));
  for (ir::OpId i = 0; i < g.num_ops(); ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

TEST_CASE("element-wise chains merge and identical layers form a repeated block") {
  Graph g = layered(4);
  Coarsening c = coarsen(g, identity(g), [&](ir::OpId id) { return elementwise(g, id); });
  // stem, 4 x (MatMul, Relu+Sigmoid), head
  CHECK(c.forward_groups == 14);
  CHECK(c.merged_elementwise == 4);
  CHECK(c.groups.size() == 10);
  REQUIRE(c.blocks.size() == 1);
  CHECK(c.blocks[0].period == 2);
  CHECK(c.blocks[0].repeats == 4);
  CHECK(c.blocks[0].first_group == 1);
  // stem, the two block positions, head
  CHECK(c.num_classes == 4);
  CHECK(c.group_class[1] == c.group_class[3]);
  CHECK(c.group_class[2] == c.group_class[8]);
  CHECK(c.group_class[1] != c.group_class[2]);
}

TEST_CASE("without merging, each forward op is a group") {
  Graph g = layered(2);
  CoarseningOptions o;
  o.merge_elementwise = false;
  o.detect_repeats = false;
  Coarsening c = coarsen(
      g, identity(g), [&](ir::OpId id) { return elementwise(g, id); }, o);
  CHECK(c.groups.size() == 8);
  CHECK(c.num_classes == 8);
}

TEST_CASE("backward ops join their forward op's group") {
  Graph g = layered(3);
  auto tg = build_training_graph(g, {});
  REQUIRE(tg);
  Coarsening c = coarsen(tg->graph, tg->op_group,
                         [&](ir::OpId id) { return id < g.num_ops() && elementwise(g, id); });
  CHECK(c.groups.size() == 8);  // same as forward: stem, 3 x 2, head
  std::set<int> seen;
  for (int grp : c.op_group) seen.insert(grp);
  CHECK(seen.size() == 8);
  REQUIRE(c.blocks.size() == 1);
  CHECK(c.blocks[0].repeats == 3);
}

}  // namespace
}  // namespace planner::analysis
