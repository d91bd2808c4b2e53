// Opset-18 models read through ONNX 1.12, which knows operator schemas up to opset 17
// (docs/models.md, "Opset 18").
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "support/expected.h"

namespace planner::importers {

/// Rewrites, in place, a model that imports opset 18 of the default domain into the same
/// computation at opset 17, and sets its import to 17:
///
/// - ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
///   ReduceLogSumExp and ReduceSumSquare take their `axes` as an input at 18 and as an
///   attribute at 17: a constant axes input (an initializer or a Constant node's value)
///   becomes the attribute; none means every axis, or the identity with
///   `noop_with_empty_axes = 1`;
/// - Split's `num_outputs` (18) goes: opset 17 splits into as many equal pieces as there are
///   outputs, which is the same where the extent divides evenly (otherwise shape inference
///   reports the node);
/// - Resize's opset-18 attributes at their defaults (`antialias = 0`, no `axes`,
///   `keep_aspect_ratio_policy = "stretch"`) go;
/// - Mish (new at 18) becomes `x * Tanh(Softplus(x))`;
/// - GroupNormalization (new at 18; scale and bias per group) becomes Reshape to [N, G, -1] ->
///   InstanceNormalization (constant ones and zeros) -> Mul and Add of the scale and bias as
///   [G, 1] -> Reshape to the input's shape, which the importer then reads as
///   LayerNormalization (importers/lower_ops.h).
///
/// Every other opset-18 form that opset 17 lacks (Pad's `axes` input, antialiased Resize, a
/// reduction whose axes are computed at run time, the Bitwise operators, Col2Im, CenterCropPad,
/// ...) is one error naming `source` and the node. A model at another opset is left alone.
Expected<void> downgrade_opset18(onnx::ModelProto& model, const std::string& source);

}  // namespace planner::importers
