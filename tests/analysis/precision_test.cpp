// Mixed precision's storage types (analysis/precision.h): under fp16 the activations and their
// gradients are 16-bit and everything the optimizer keeps is f32; with
// half_parameter_gradients (Megatron-LM's --fp16) the gradients of parameters the backward pass
// makes are 16-bit too, while what the update writes stays f32.
#include "analysis/precision.h"
#include "tests/generated_models.h"

namespace an = planner::analysis;
namespace ir = planner::ir;
namespace pt = planner::testing;

namespace {

struct Counts {
  int half_gradients = 0, f32_gradients = 0, half_update_outputs = 0, half_activations = 0;
};

Counts count(bool half_parameter_gradients) {
  const ir::Graph fwd = pt::import_generated_gpt(pt::tiny_gpt_shape(2, 0.1), 2);
  an::TrainingGraph tg = pt::adam_training_step(fwd, an::Recompute::kNone);
  ir::Graph g = tg.graph;
  an::apply_precision(g, &tg, ir::Precision::kFp16, half_parameter_gradients);
  Counts c;
  for (ir::TensorId t = 0; t < g.num_tensors(); ++t) {
    const ir::Tensor& tensor = g.tensor(t);
    const ir::TensorId of = tg.tensor_of_grad[static_cast<size_t>(t)];
    const bool parameter_gradient =
        of != ir::kNoTensor && g.tensor(of).role == ir::TensorRole::kParameter;
    const ir::OpId p = tensor.producer;
    const bool by_update =
        p != ir::kNoOp && tg.op_phase[static_cast<size_t>(p)] == an::Phase::kUpdate;
    if (parameter_gradient && !by_update)
      (tensor.dtype == ir::DType::kFloat16 ? c.half_gradients : c.f32_gradients) += 1;
    if (by_update && tensor.dtype == ir::DType::kFloat16) ++c.half_update_outputs;
    if (!parameter_gradient && !by_update && tensor.role == ir::TensorRole::kActivation &&
        tensor.dtype == ir::DType::kFloat16)
      ++c.half_activations;
  }
  return c;
}

}  // namespace

TEST_CASE("precision: AMP keeps parameter gradients f32, Megatron's fp16 makes them 16-bit") {
  const Counts amp = count(false);
  CHECK(amp.half_gradients == 0);
  CHECK(amp.f32_gradients > 20);
  CHECK(amp.half_update_outputs == 0);

  const Counts megatron = count(true);
  CHECK(megatron.f32_gradients == 0);
  CHECK(megatron.half_gradients == amp.f32_gradients);
  CHECK(megatron.half_update_outputs == 0);  // parameters and Adam moments stay f32
  CHECK(megatron.half_activations == amp.half_activations);
}

TEST_CASE("precision: fp8 puts the linear layers and their gradients on FP8, not the head") {
  const ir::Graph fwd = pt::import_generated_llama(2, 2, 2);
  an::TrainingGraph tg = pt::adam_training_step(fwd, an::Recompute::kNone);
  ir::Graph g = tg.graph;
  an::apply_precision(g, &tg, ir::Precision::kFp8);
  int forward = 0, backward = 0;
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    const ir::Op& op = g.op(id);
    if (!op.fp8) continue;
    CHECK(tg.op_phase[static_cast<size_t>(id)] != an::Phase::kUpdate);
    (tg.op_phase[static_cast<size_t>(id)] == an::Phase::kForward ? forward : backward) += 1;
    const std::string leader = g.op(tg.op_group[static_cast<size_t>(id)]).name;
    CHECK_MESSAGE(leader != "output", op.name);  // the LM head stays 16-bit
  }
  // Seven linear layers per block (wq, wk, wv, wo, w1, w3, w2), two blocks; each with a data
  // and a weight gradient product.
  CHECK(forward == 14);
  CHECK(backward == 28);
  // Activations are bf16's.
  CHECK(g.tensor(*g.find_tensor("logits")).dtype == ir::DType::kBFloat16);
}

TEST_CASE("precision: a Cast to f32 before the loss keeps the loss and its gradient f32") {
  planner::importers::LlamaShape shape;
  shape.layers = 1, shape.hidden = 32, shape.heads = 4, shape.seq = 8, shape.vocab = 16;
  shape.ffn = 64;
  shape.loss = true;
  const ir::Graph fwd =
      pt::import_generated(planner::importers::llama_model_bytes(shape, "tiny", "tiny.weights"), 2);
  an::TrainingGraph tg = pt::adam_training_step(fwd, an::Recompute::kNone);
  ir::Graph g = tg.graph;
  an::apply_precision(g, &tg, ir::Precision::kBf16);
  CHECK(g.tensor(*g.find_tensor("logits")).dtype == ir::DType::kBFloat16);
  CHECK(g.tensor(*g.find_tensor("grad:logits")).dtype == ir::DType::kBFloat16);
  for (const char* wide : {"loss/float", "loss/rows", "loss:log_prob", "grad:loss/rows"})
    CHECK_MESSAGE(g.tensor(*g.find_tensor(wide)).dtype == ir::DType::kFloat32, wide);
}
