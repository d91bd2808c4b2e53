// Layer normalisation spelled out in element-wise operators, as exporters below opset 17 write
// it, rewritten into the one LayerNormalization operator frameworks run as one kernel.
#pragma once

#include <string>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::importers {

/// Finds ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(epsilon) -> Sqrt -> Div -> Mul(scale)
/// -> Add(bias) over the last axis (torch.onnx's nn.LayerNorm at opsets 9-16) and replaces each
/// such chain by LayerNormalization(X, scale, bias) with its epsilon, keeping the output tensor.
/// A chain whose intermediates are read elsewhere, or whose scale and bias are not 1-D, stays
/// as it is. `graph` must be finalized; it is finalized again. Returns how many were fused.
Expected<int> fuse_layer_norm(ir::Graph& graph, const std::string& source);

}  // namespace planner::importers
