// Kernel fusion as frameworks run it (analysis/fusion.h), on a generated GPT's training step:
// which operators share a kernel, which tensors never reach memory, and what that does to a
// kernel's price.
#include <doctest/doctest.h>
#include <string>

#include "analysis/cost_model.h"
#include "analysis/fusion.h"
#include "analysis/training_graph.h"
#include "importers/topology.h"
#include "tests/generated_models.h"

namespace an = planner::analysis;
namespace ir = planner::ir;

namespace {

ir::Graph gpt(int layers) {
  return planner::testing::import_generated_gpt(planner::testing::tiny_gpt_shape(layers, 0.1), 2);
}

an::TrainingGraph train(const ir::Graph& fwd, an::Recompute recompute) {
  return planner::testing::adam_training_step(fwd, recompute);
}

const ir::Op& named(const ir::Graph& g, const std::string& name) {
  for (ir::OpId id = 0; id < g.num_ops(); ++id)
    if (g.op(id).name == name) return g.op(id);
  FAIL("no operator " << name);
  return g.op(0);
}

bool joins(const ir::Graph& g, const std::string& name) {
  return named(g, name).fused_launch;
}
bool writes_out(const ir::Graph& g, const std::string& name) {
  return (named(g, name).fused_writes & 1) == 0;
}

int fused_in_layer(const ir::Graph& g, const std::string& layer) {
  int n = 0;
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    const std::string& name = g.op(id).name;
    bool in = name.rfind(layer + "/", 0) == 0 || name.rfind(layer + ".", 0) == 0 ||
              name.rfind("recompute/" + layer + "/", 0) == 0 ||
              name.rfind("recompute/" + layer + ".", 0) == 0;
    n += in && g.op(id).fused_launch;
  }
  return n;
}

}  // namespace

TEST_CASE("framework names round-trip and unknown ones are refused") {
  for (an::Framework f : {an::Framework::kNone, an::Framework::kTorch, an::Framework::kMegatron,
                          an::Framework::kTorchCompile})
    CHECK(an::framework_from_name(an::framework_name(f)) == f);
  CHECK_FALSE(an::framework_from_name("jax").has_value());
}

TEST_CASE("none fuses nothing, and clears earlier marks") {
  an::TrainingGraph tg = train(gpt(1), an::Recompute::kNone);
  ir::Graph g = tg.graph;
  CHECK(an::fuse_kernels(g, &tg, an::Framework::kMegatron).kernels > 0);
  an::FusionSummary s = an::fuse_kernels(g, &tg, an::Framework::kNone);
  CHECK(s.kernels == 0);
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    CHECK(g.op(id).fused_reads == 0);
    CHECK(g.op(id).fused_writes == 0);
    CHECK_FALSE(g.op(id).fused_launch);
  }
}

TEST_CASE("megatron: bias-GELU, scale-mask-softmax and bias-dropout-add, forward and backward") {
  for (an::Recompute rc : {an::Recompute::kNone, an::Recompute::kAll}) {
    CAPTURE(an::recompute_name(rc));
    an::TrainingGraph tg = train(gpt(1), rc);
    ir::Graph g = tg.graph;
    an::FusionSummary s = an::fuse_kernels(g, &tg, an::Framework::kMegatron);
    CHECK(s.kernels > 0);
    CHECK(s.saved_bytes > 0);
    // The bias joins its GEMM's epilogue: the product never reaches memory.
    CHECK(joins(g, "h0.mlp.c_fc/bias"));
    CHECK_FALSE(writes_out(g, "h0.mlp.c_fc/matmul"));
    // GELU's five operators are one kernel that writes only its result.
    CHECK_FALSE(joins(g, "h0/gelu/div"));
    for (const char* op : {"h0/gelu/erf", "h0/gelu/add", "h0/gelu/half", "h0/gelu"})
      CHECK_MESSAGE(joins(g, op), op);
    CHECK_FALSE(writes_out(g, "h0/gelu/erf"));
    CHECK(writes_out(g, "h0/gelu"));  // read by the next GEMM
    // Scale, mask and softmax: one kernel, ended by the softmax; dropout is its own.
    CHECK(joins(g, "h0/mask"));
    CHECK(joins(g, "h0/softmax"));
    CHECK(writes_out(g, "h0/softmax"));
    CHECK_FALSE(joins(g, "h0.attn/dropout"));
    // Bias-dropout-add: the dropout and the residual add share a kernel.
    CHECK(joins(g, "h0/residual_2"));
    // The backward of GELU is one kernel too, and of the fused softmax (with the scale).
    CHECK(joins(g, "h0/gelu/erf/grad"));
    CHECK(joins(g, "h0/scale/grad"));
    if (rc == an::Recompute::kAll) {
      // The recomputed GELU keeps its inner values in registers: its backward recomputes them.
      CHECK(joins(g, "recompute/h0/gelu/erf"));
      CHECK_FALSE(writes_out(g, "recompute/h0/gelu/add"));
    } else {
      CHECK_FALSE(writes_out(g, "h0/gelu/add"));
    }
  }
}

TEST_CASE("torch fuses only GELU and bias epilogues; torch-compile fuses softmax and dropout") {
  an::TrainingGraph tg = train(gpt(1), an::Recompute::kNone);
  ir::Graph torch = tg.graph, compiled = tg.graph, megatron = tg.graph;
  an::FusionSummary t = an::fuse_kernels(torch, &tg, an::Framework::kTorch);
  an::FusionSummary m = an::fuse_kernels(megatron, &tg, an::Framework::kMegatron);
  an::FusionSummary c = an::fuse_kernels(compiled, &tg, an::Framework::kTorchCompile);
  CHECK(joins(torch, "h0/gelu/erf"));
  CHECK(joins(torch, "h0.mlp.c_fc/bias"));
  CHECK_FALSE(joins(torch, "h0/mask"));
  CHECK_FALSE(joins(torch, "h0/residual_2"));
  CHECK(joins(compiled, "h0.attn/dropout"));
  CHECK(joins(compiled, "h0/mask"));
  CHECK(t.saved_bytes < m.saved_bytes);
  CHECK(m.saved_bytes < c.saved_bytes);
}

TEST_CASE("fused kernels stay inside a layer, and the marks do not depend on earlier ones") {
  an::TrainingGraph tg = train(gpt(3), an::Recompute::kAll);
  ir::Graph g = tg.graph;
  an::FusionSummary first = an::fuse_kernels(g, &tg, an::Framework::kMegatron);
  // Every layer's kernels alike: a kernel reaching across layers would make one differ. (The
  // first layer reads the embedding's output, not a layer's: its residual adds fuse less.)
  const int h1 = fused_in_layer(g, "h1");
  CHECK(fused_in_layer(g, "h0") > 0);
  CHECK(h1 > fused_in_layer(g, "h0"));
  CHECK(fused_in_layer(g, "h2") == h1);
  ir::Graph again = g;
  an::FusionSummary second = an::fuse_kernels(again, &tg, an::Framework::kMegatron);
  CHECK(second.kernels == first.kernels);
  CHECK(second.saved_bytes == first.saved_bytes);
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    CHECK(again.op(id).fused_reads == g.op(id).fused_reads);
    CHECK(again.op(id).fused_writes == g.op(id).fused_writes);
    CHECK(again.op(id).fused_launch == g.op(id).fused_launch);
  }
}

TEST_CASE("an operator inside another's kernel launches nothing and streams at full bandwidth") {
  auto topo = planner::importers::topology_preset("dgx-h100");
  REQUIRE(topo);
  an::ComputeCostModel model;
  ir::Op add;
  add.op_type = "Add";
  const auto& type = topo->device_type(0);
  const double own = model.op_time(type, add, ir::DType::kFloat32, {{1000}}, 1000, 1e4, true);
  const double inside = model.op_time(type, add, ir::DType::kFloat32, {{1000}}, 1000, 1e4, false);
  CHECK(inside < own);
  CHECK(own - inside >= model.options().launch_overhead);
  add.fused_launch = true;  // the mark picks the same price
  CHECK(model.op_time(type, add, ir::DType::kFloat32, {{1000}}, 1000, 1e4) == inside);
}
