// Training-mode operators rewritten into forms the planner can split exactly: BatchNormalization
// with batch statistics and Dropout with `training_mode` (docs/training.md).
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::importers {

/// Rewrites, in place, the training forms of two ONNX operators (every other op is left
/// alone):
///
/// - BatchNormalization with `training_mode=1` (opset 14+) or with more than one output
///   (opset 9-13's Y, mean, var, saved_mean, saved_var) becomes
///   `ai.planner.BatchNormStats<count>(X) -> stats[2, C]` (per channel, the sums of x and x^2
///   over the batch and space divided by `count`, the elements per channel: a split along the
///   batch leaves partial sums that add up) followed by
///   `ai.planner.BatchNormTrain<epsilon>(X, scale, B, stats) -> Y`, which keeps the node's name;
///   running statistics the graph uses come from
///   `ai.planner.BatchNormRunningStats<momentum>(stats, mean, var) -> (running_mean,
///   running_var, saved_mean, saved_var)`.
/// - Dropout whose `training_mode` input is a constant true becomes
///   `ai.planner.DropoutTrain<ratio, seed>(X) -> (Y, mask)`; `seed` mixes the node's name into
///   its `seed` attribute, so each node draws its own deterministic mask.
///
/// Requires a finalized graph with static shapes; leaves it finalized. Never reads parameter
/// values. Errors name `source` and the node.
Expected<void> lower_training_ops(ir::Graph& graph, const std::string& source);

/// The seed of a DropoutTrain node: FNV-1a of its name, mixed with the ONNX `seed` attribute.
int64_t dropout_seed(const std::string& node_name, int64_t onnx_seed);

}  // namespace planner::importers
