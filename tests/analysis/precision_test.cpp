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
