// The bridge from the graph IR to TDL instantiation: one ir::Op becomes a tdl::InstanceRequest
// with ONNX's defaults and conventions normalised, so that one library description covers every
// spelling of an operator.
#pragma once

#include <string>

#include "ir/graph.h"
#include "support/expected.h"
#include "tdl/instantiate.h"

namespace planner::analysis {

/// Builds the request for `op` of `graph`: attributes converted to TDL values, input and output
/// shapes (absent optional ones marked), the integer contents of small constant inputs (Reshape's
/// shape, Slice's starts/ends/axes/steps, Split's sizes, Pad's pads, ...), and these
/// normalisations, which the shipped descriptions rely on:
///  - Conv and the pools: auto_pad turned into explicit pads; strides, dilations and pads filled
///    with their defaults for the input's spatial rank; Conv's kernel_shape taken from W.
///  - single axes (`axis` of Softmax, LogSoftmax, Hardmax, LpNormalization, LayerNormalization,
///    Gather, GatherElements, Concat, Split, Flatten, ArgMax, ArgMin, CumSum) made
///    non-negative; CumSum's constant axis input becomes the `axis` attribute.
///  - reductions (Reduce*): a constant `axes` input (opset 18, ReduceSum 13) becomes the `axes`
///    attribute; axes made non-negative and sorted.
/// Errors (an out-of-range axis, a non-constant axes input, attribute lists of the wrong
/// length) name the node: "node 'conv1' (Conv): attribute 'strides' has 3 values, expected 2".
/// Precondition: `graph` is finalized and `op` is one of its ids.
Expected<tdl::InstanceRequest> make_instance_request(const ir::Graph& graph, ir::OpId op);

/// A canonical text of everything in `request` that can change the analysis: op type, domain,
/// attributes, input and output shapes and presence, constant input values. The node name is
/// left out, so identical operators share one key (the strategy cache's key).
std::string request_key(const tdl::InstanceRequest& request);

/// `node 'name' (Type)`, or `node 'name' (domain.Type)` outside the default domain: how error
/// messages name an operator.
std::string node_label(const ir::Op& op);

}  // namespace planner::analysis
