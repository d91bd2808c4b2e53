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
void apply_precision(ir::Graph& graph, const TrainingGraph* training, ir::Precision precision);

}  // namespace planner::analysis
