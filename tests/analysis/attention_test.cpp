// The attention cores (analysis/attention.h) of the decoders the planner generates, and of
// graphs whose softmax is not attention's: which operators a core holds, in order.
#include <string>
#include <vector>

#include "analysis/attention.h"
#include "tests/generated_models.h"
#include "tests/graph_build.h"

namespace an = planner::analysis;
namespace ir = planner::ir;
namespace pt = planner::testing;

namespace {

std::vector<std::string> types(const ir::Graph& g, const an::AttentionCore& core) {
  std::vector<std::string> out;
  for (ir::OpId op : core.ops) out.push_back(g.op(op).op_type);
  return out;
}

}  // namespace

TEST_CASE("attention cores: a GPT's, with and without dropout on the probabilities") {
  for (double dropout : {0.0, 0.1}) {
    INFO("dropout " << dropout);
    const ir::Graph g = pt::import_generated_gpt(pt::tiny_gpt_shape(3, dropout), 2);
    const std::vector<an::AttentionCore> cores = an::find_attention_cores(g);
    REQUIRE(cores.size() == 3);
    for (size_t l = 0; l < cores.size(); ++l) {
      const an::AttentionCore& c = cores[l];
      const std::string layer = "h" + std::to_string(l) + "/";
      CHECK(g.op(c.scores).name == layer + "scores");
      CHECK(g.op(c.softmax).op_type == "Softmax");
      CHECK(g.op(c.context).name == layer + "context");
      std::vector<std::string> want = {"MatMul", "Mul", "Add", "Softmax"};
      if (dropout > 0) want.push_back("DropoutTrain");  // the importer's training-mode Dropout
      CHECK(types(g, c) == want);
      // The probabilities (after their dropout) are what the context's product reads.
      CHECK(g.op(c.context).inputs[0] == g.op(c.ops.back()).outputs[0]);
    }
  }
}

TEST_CASE("attention cores: a Llama's under grouped-query attention, and in its training step") {
  const ir::Graph g = pt::import_generated_llama(2, 2, 2);
  const std::vector<an::AttentionCore> cores = an::find_attention_cores(g);
  REQUIRE(cores.size() == 2);
  for (const an::AttentionCore& c : cores)
    CHECK(types(g, c) == std::vector<std::string>{"MatMul", "Mul", "Add", "Softmax"});

  // In a training step the backward operators read the same tensors: only forward operators
  // are searched when the caller says so, and the cores are the forward pass's.
  const an::TrainingGraph tg = pt::adam_training_step(g, an::Recompute::kNone);
  std::vector<bool> forward(static_cast<size_t>(tg.graph.num_ops()));
  for (ir::OpId id = 0; id < tg.graph.num_ops(); ++id)
    forward[static_cast<size_t>(id)] = tg.op_phase[static_cast<size_t>(id)] == an::Phase::kForward;
  const std::vector<an::AttentionCore> in_step = an::find_attention_cores(tg.graph, &forward);
  REQUIRE(in_step.size() == 2);
  for (const an::AttentionCore& c : in_step)
    for (ir::OpId op : c.ops) CHECK(forward[static_cast<size_t>(op)]);
  // Without the filter the scores have backward readers too, and no core is found.
  CHECK(an::find_attention_cores(tg.graph).empty());
}

TEST_CASE("attention cores: a softmax over a layer's output is not attention") {
  // softmax(x W) V: the product before the softmax reads a weight.
  ir::Graph g;
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape, ir::TensorRole role) {
    return pt::add_tensor(g, name, std::move(shape), role);
  };
  const auto x = tensor("x", {2, 4, 8}, ir::TensorRole::kInput);
  const auto w = tensor("w", {8, 4}, ir::TensorRole::kParameter);
  const auto v = tensor("v", {2, 4, 8}, ir::TensorRole::kInput);
  const auto xw = tensor("xw", {2, 4, 4}, ir::TensorRole::kActivation);
  const auto p = tensor("p", {2, 4, 4}, ir::TensorRole::kActivation);
  const auto y = tensor("y", {2, 4, 8}, ir::TensorRole::kActivation);
  auto op = [&](const std::string& name, const std::string& type, std::vector<ir::TensorId> in,
                std::vector<ir::TensorId> out) {
    ir::Op o;
    o.name = name;
    o.op_type = type;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    g.add_op(std::move(o));
  };
  op("proj", "MatMul", {x, w}, {xw});
  op("softmax", "Softmax", {xw}, {p});
  op("mix", "MatMul", {p, v}, {y});
  g.inputs = {x, v};
  g.outputs = {y};
  REQUIRE(g.finalize("test").has_value());
  CHECK(an::find_attention_cores(g).empty());
}
