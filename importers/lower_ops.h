// ONNX operators imported as exact compositions of others the planner already describes,
// differentiates and runs (docs/models.md, "Operators imported as others").
#pragma once

#include <string>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::importers {

/// Rewrites, in place:
///
/// - InstanceNormalization(X[N, C, S...], scale[C], B[C]) into
///   LayerNormalization<axis = 2, epsilon>(X, ones[S...], zeros[S...]), followed by a Mul with
///   scale and an Add of B (each reshaped to [C, 1, ...]) unless they are constant ones and
///   zeros, as in PyTorch's GroupNorm export (Reshape to [N, G, -1], InstanceNormalization with
///   constant ones and zeros, Reshape back, then the affine Mul and Add). Normalising each
///   (sample, channel) row over its trailing dimensions is exactly LayerNormalization from
///   axis 2.
/// - Resize (and nothing else) in `nearest` mode whose every output extent is an integer
///   multiple f of the input's, with a coordinate rule under which output i reads input
///   floor(i / f) exactly (`asymmetric` with `floor`, `half_pixel` or `pytorch_half_pixel` with
///   `round_prefer_floor` or `round_prefer_ceil`, as nn.Upsample(mode="nearest") exports), into
///   Reshape (a unit dimension after each enlarged one) -> Expand (that dimension to f) ->
///   Reshape (merged back). Other Resize nodes are left as they are.
/// - ReduceMean, ReduceSum, ReduceMax and ReduceMin over two or more adjacent axes (Swin's
///   mean over the 7 x 7 window positions, axes [1, 2]) into Reshape (the axes merged) -> the
///   reduction over the merged axis -> Reshape (keepdims' unit dimensions), except the spatial
///   pair [2, 3] of a rank-4 tensor, which the library describes.
/// - SoftmaxCrossEntropyLoss into its ONNX function body, LogSoftmax over axis 1 followed by
///   NegativeLogLikelihoodLoss (same reduction, ignore_index, weights); the LogSoftmax gives the
///   optional log_prob output.
/// - NegativeLogLikelihoodLoss with reduction `mean` into the summed loss divided by the
///   weights of the targets counted (ReduceSum of the targets' class weights, zero where
///   ignored; a constant count without weights or ignore_index): two sums that split along the
///   samples, where the mean would have to read every sample at once.
///
/// Requires a finalized graph with static shapes; leaves it finalized. Never reads parameter
/// values. Errors name `source` and the node.
Expected<void> lower_ops(ir::Graph& graph, const std::string& source);

}  // namespace planner::importers
