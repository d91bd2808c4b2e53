// Recomputation (analysis/recompute.h) changes where the backward pass gets its activations,
// never what the step computes: a generated GPT-style decoder with training-mode Dropout runs
// on the runtime's kernels with and without recomputation, and every output and updated
// parameter is bit-identical. The rewritten graph keeps only checkpoints for the backward pass
// and runs each clone after the operator before it.

#include <cstdio>
#include <set>

#include "analysis/recompute.h"
#include "tests/generated_models.h"
#include "training_executor.h"

using namespace rt_test;

namespace {

ir::Graph tiny_gpt(double dropout) {
  return planner::testing::import_generated_gpt(planner::testing::tiny_gpt_shape(3, dropout), 2);
}

an::TrainingGraph train(const ir::Graph& fwd, an::Recompute recompute) {
  return planner::testing::adam_training_step(fwd, recompute);
}

// Forward activations the backward and update operators read.
std::set<ir::TensorId> saved(const an::TrainingGraph& tg) {
  return saved_activations(tg);
}

// Runs both steps on the runtime's kernels; checks every output and updated tensor of `plain`
// is byte for byte the same in `re`, and returns how many were compared.
int outputs_identical(const an::TrainingGraph& plain, const an::TrainingGraph& re) {
  Executor a(plain), b(re);
  a.run(false);
  b.run(false);
  return outputs_agree(a, b);
}

}  // namespace

TEST_CASE("recompute: the step with recomputation computes exactly what the step without does") {
  const ir::Graph fwd = tiny_gpt(0.1);
  const an::TrainingGraph plain = train(fwd, an::Recompute::kNone);
  const an::TrainingGraph re = train(fwd, an::Recompute::kAll);

  int clones = 0;
  for (ir::OpId id = 0; id < re.graph.num_ops(); ++id)
    if (re.op_phase[static_cast<size_t>(id)] == an::Phase::kRecompute) ++clones;
  CHECK(re.graph.num_ops() == plain.graph.num_ops() + clones);
  CHECK(clones > 20);

  const int compared = outputs_identical(plain, re);
  CHECK(compared > 30);  // logits, and every parameter and Adam moment updated
}

TEST_CASE(
    "recompute: only checkpoints are kept, and each clone runs where the backward pass needs it") {
  const ir::Graph fwd = tiny_gpt(0.1);
  const an::TrainingGraph plain = train(fwd, an::Recompute::kNone);
  an::TrainingGraph re = train(fwd, an::Recompute::kAll);

  const std::set<ir::TensorId> kept_before = saved(plain), kept_after = saved(re);
  int64_t before = 0, after = 0;
  for (ir::TensorId t : kept_before) before += plain.graph.tensor(t).num_bytes();
  for (ir::TensorId t : kept_after) after += re.graph.tensor(t).num_bytes();
  INFO("saved bytes " << before << " -> " << after);
  CHECK(after * 3 < before);
  // Checkpoints are residual streams (outputs of the blocks' residual Adds) or kept
  // whole-pass tensors, never an attention score or MLP activation.
  for (ir::TensorId t : kept_after) {
    const ir::Op& p = re.graph.op(re.graph.tensor(t).producer);
    INFO(p.name << " (" << p.op_type << ")");
    CHECK(p.op_type != "Softmax");
    CHECK(p.op_type != "Erf");
  }

  std::vector<size_t> place(static_cast<size_t>(re.graph.num_ops()));
  for (size_t i = 0; i < re.graph.topo_order().size(); ++i)
    place[static_cast<size_t>(re.graph.topo_order()[i])] = i;
  for (ir::OpId id = 0; id < re.graph.num_ops(); ++id) {
    const ir::Op& op = re.graph.op(id);
    if (re.op_phase[static_cast<size_t>(id)] != an::Phase::kRecompute) {
      CHECK(op.after.empty());
      continue;
    }
    INFO(op.name);
    CHECK(op.name.rfind("recompute/", 0) == 0);
    REQUIRE(op.after.size() == 1);
    const ir::OpId waits_for = op.after[0];
    CHECK(re.op_phase[static_cast<size_t>(waits_for)] != an::Phase::kRecompute);
    CHECK(place[static_cast<size_t>(waits_for)] < place[static_cast<size_t>(id)]);
    // Its group is its original's: a clone is split as the forward operator is.
    const ir::OpId original = re.op_group[static_cast<size_t>(id)];
    CHECK(re.op_phase[static_cast<size_t>(original)] == an::Phase::kForward);
    CHECK(re.graph.op(original).op_type == op.op_type);
    for (ir::TensorId out : op.outputs)
      if (out != ir::kNoTensor) CHECK(re.recomputes[static_cast<size_t>(out)] != ir::kNoTensor);
  }
}

TEST_CASE("recompute selective: only the attention cores run again, and the step is unchanged") {
  const ir::Graph fwd = tiny_gpt(0.1);
  const an::TrainingGraph plain = train(fwd, an::Recompute::kNone);
  const an::TrainingGraph re = train(fwd, an::Recompute::kSelective);

  // Per layer the scores' product, scale, mask, softmax and dropout: five clones, in order.
  std::vector<std::string> cloned;
  for (ir::OpId id : re.graph.topo_order())
    if (re.op_phase[static_cast<size_t>(id)] == an::Phase::kRecompute)
      cloned.push_back(re.graph.op(id).op_type);
  const std::vector<std::string> core = {"MatMul", "Mul", "Add", "Softmax", "DropoutTrain"};
  REQUIRE(cloned.size() == 3 * core.size());
  for (size_t i = 0; i < cloned.size(); ++i) CHECK(cloned[i] == core[i % core.size()]);

  // The backward pass reads no s x s tensor of the forward pass (those it reads are the
  // clones'), and every other saved activation is still kept.
  const std::set<ir::TensorId> kept_before = saved(plain), kept_after = saved(re);
  int64_t before = 0, after = 0;
  for (ir::TensorId t : kept_before) before += plain.graph.tensor(t).num_bytes();
  for (ir::TensorId t : kept_after) after += re.graph.tensor(t).num_bytes();
  INFO("saved bytes " << before << " -> " << after);
  CHECK(after < before);
  auto in_core = [](const std::string& name) {
    for (const char* part : {"/scores", "/scale", "/mask", "/softmax", ".attn/dropout"})
      if (name.find(part) != std::string::npos) return true;
    return false;
  };
  for (ir::TensorId t : kept_after) {
    INFO(re.graph.tensor(t).name);
    CHECK(!in_core(re.graph.tensor(t).name));
  }
  int dropped = 0;
  for (ir::TensorId t : kept_before) {
    if (in_core(plain.graph.tensor(t).name)) {
      ++dropped;
      continue;
    }
    INFO(plain.graph.tensor(t).name);
    CHECK(kept_after.count(*re.graph.find_tensor(plain.graph.tensor(t).name)) == 1);
  }
  CHECK(dropped > 0);

  const int compared = outputs_identical(plain, re);
  CHECK(compared > 30);
}
