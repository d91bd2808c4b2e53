// Mixed precision as a graph pass: the element types a step stores its tensors in under
// --precision, so that memory, communication bytes and kernel peaks all follow from the
// tensors' dtypes.
#pragma once

#include "analysis/training_graph.h"
#include "ir/graph.h"
#include "ir/precision.h"

namespace planner::analysis {

/// Sets the storage type of `graph`'s tensors for `precision`. fp32 and tf32 change nothing
/// (TF32 is a property of the kernels, see ComputeCostOptions). fp16 and bf16 follow PyTorch
/// AMP: floating activations and the gradients of activations are stored in 16 bit; model
/// inputs, parameters, optimizer state, the gradients of parameters (DDP all-reduces the f32
/// .grad of f32 parameters) and whatever the update reads or writes stay f32. `training` is
/// the training graph `graph` belongs to, or null for an inference graph.
/// A Cast to f32 of an activation in the forward pass (torch's `.float()` before a loss) keeps
/// its output, what the forward pass computes from such tensors alone, their recomputed clones
/// and their gradients in f32, as autocast leaves a tensor the model widened itself.
/// A training graph also gets a static loss scale (apply_loss_scale).
/// `half_parameter_gradients`: the gradients of parameters are stored, accumulated over
/// micro-batches and reduced in the 16-bit type too, the optimizer step widening them to f32
/// as it reads them: Megatron-LM's `--fp16` without `--accumulate-allreduce-grads-in-fp32`
/// (docs/training.md, "Mixed precision").
void apply_precision(ir::Graph& graph, const TrainingGraph* training, ir::Precision precision,
                     bool half_parameter_gradients = false);

/// Static loss scaling, as AMP's GradScaler does it with a fixed scale: the seeds of the
/// backward pass (LossGrad, dy = y / numel(y) for the step's mean loss) are multiplied by a
/// power of two S close to the largest output's element count, so 16-bit activation gradients
/// stay clear of underflow, and the updates multiply the f32 parameter gradients by 1/S
/// (attribute grad_scale) before using them. Exact: S is a power of two.
void apply_loss_scale(ir::Graph& graph);

}  // namespace planner::analysis
