// Fused attention (analysis/fuse_attention.h) changes how a step computes attention, not what:
// generated GPT and Llama decoders train one Adam step on the runtime's kernels with their
// attention cores as written and fused into ai.planner.Attention, and every output and updated
// tensor agrees within float32 rounding. The rewrite leaves no S x S tensor behind, keeps cores
// it cannot fuse (dropout on the probabilities) and says why, and torchtitan's op-level
// selective checkpointing (Recompute::kOps) over the fused step recomputes exactly the step.

#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "analysis/fuse_attention.h"
#include "analysis/recompute.h"
#include "tests/generated_models.h"
#include "training_executor.h"

using namespace rt_test;

namespace {

ir::Graph fused(ir::Graph g, int cores) {
  auto done = an::fuse_attention(g, "tiny.onnx");
  REQUIRE_MESSAGE(done.has_value(), (done ? "" : done.error().message()));
  CHECK(done->fused == cores);
  CHECK(done->causal == cores);
  CHECK(done->kept.empty());
  return g;
}

int count(const ir::Graph& g, const char* type) {
  int n = 0;
  for (const ir::Op& op : g.ops()) n += op.op_type == type;
  return n;
}

// One step with plain SGD: Adam's first step divides each gradient by its own magnitude, so
// elements whose gradient is zero but for rounding (a key bias: softmax ignores a constant
// added to a row of scores) would move by a whole learning rate either way.
an::TrainingGraph sgd_step(const ir::Graph& forward) {
  an::TrainingOptions options;
  options.optimizer = an::Optimizer::kSgd;
  auto tg = an::build_training_graph(forward, options, "tiny.onnx");
  REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
  return std::move(*tg);
}

// Runs both steps; compares every output and updated tensor (outputs_agree): exactly, or within
// float32 rounding of a different summation order. Returns how many were compared.
int steps_agree(const an::TrainingGraph& a, const an::TrainingGraph& b, bool exact) {
  Executor x(a), y(b);
  x.run(false);
  y.run(false);
  return rt_test::outputs_agree(x, y, exact ? 0.0 : 1e-5);
}

}  // namespace

TEST_CASE("fused attention: a GPT step computes what the materialized step computes") {
  const ir::Graph plain =
      planner::testing::import_generated_gpt(planner::testing::tiny_gpt_shape(2, 0.0), 2);
  const ir::Graph fuse = fused(plain, 2);
  CHECK(count(fuse, "Softmax") == 0);
  CHECK(count(fuse, "Attention") == 2);
  CHECK(count(fuse, "Trilu") == 0);  // the causal mask is the kernel's own
  // No batch x heads x S x S tensor is left.
  for (const ir::Tensor& t : fuse.tensors())
    CHECK_FALSE((t.rank() == 4 && t.shape[2] == 8 && t.shape[3] == 8 && t.shape[1] == 4 &&
                 t.role == ir::TensorRole::kActivation &&
                 t.name.find("score") != std::string::npos));
  const auto a = sgd_step(plain);
  const auto b = sgd_step(fuse);
  CHECK(count(b.graph, "AttentionGrad") == 2);
  CHECK(steps_agree(a, b, false) > 20);  // logits and every parameter updated
}

TEST_CASE("fused attention: a Llama step with grouped-query attention") {
  const ir::Graph plain = planner::testing::import_generated_llama(2, 2, 2);
  const ir::Graph fuse = fused(plain, 2);
  const auto a = sgd_step(plain);
  const auto b = sgd_step(fuse);
  CHECK(steps_agree(a, b, false) > 15);
}

TEST_CASE("fused attention: dropout on the probabilities keeps a core materialized, named") {
  ir::Graph g = planner::testing::import_generated_gpt(planner::testing::tiny_gpt_shape(2, 0.1), 2);
  auto done = an::fuse_attention(g, "tiny.onnx");
  REQUIRE(done.has_value());
  CHECK(done->fused == 0);
  REQUIRE(done->kept.size() == 2);
  CHECK(done->kept[0].first == "h0/softmax");
  CHECK(done->kept[0].second == "dropout on the probabilities");
  CHECK(count(g, "Softmax") == 2);
}

TEST_CASE("recompute ops: attention and every other weight product kept, the step unchanged") {
  const ir::Graph fuse = fused(planner::testing::import_generated_llama(2, 4, 2), 2);
  const auto plain = planner::testing::adam_training_step(fuse, an::Recompute::kNone);
  const auto ops = planner::testing::adam_training_step(fuse, an::Recompute::kOps);
  // What the backward pass reads from the forward pass (not from a recomputed clone).
  std::set<std::string> saved;  // their producers' names
  for (ir::TensorId t : saved_activations(ops))
    saved.insert(ops.graph.op(ops.graph.tensor(t).producer).name);
  // Per block, torchtitan's policy keeps wq, wv, w1, w2 and attention (w2's output no backward
  // operator reads); wk, wo, w3 and the norms are recomputed.
  for (const char* kept : {"layers.0.attention.wq", "layers.0.attention.wv",
                           "layers.0.feed_forward.w1", "layers.1.attention.wq", "layers.1/context"})
    CHECK_MESSAGE(saved.count(kept) == 1, kept);
  for (const char* recomputed : {"layers.0.attention.wk", "layers.0.attention.wo",
                                 "layers.0.feed_forward.w3", "layers.0.ffn_norm"})
    CHECK_MESSAGE(saved.count(recomputed) == 0, recomputed);
  CHECK(steps_agree(plain, ops, true) > 30);
}
