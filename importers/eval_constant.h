// Evaluation of ONNX operators on constant inputs, for constant folding at import time.
//
// Covers the operators exporters use to compute shapes and small constants (Shape, Gather,
// Unsqueeze, Concat, Slice, Cast, arithmetic, comparisons, Where, ConstantOfShape, Range,
// Expand, ...). Data movement works on raw bytes, so it handles every element type; arithmetic
// works on int64 or double and so skips 16-bit floating types.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "importers/shape_rules.h"
#include "ir/graph.h"
#include "support/expected.h"

namespace planner::importers {

/// True when `op` only needs its inputs' shapes, not their values, to be evaluated (Shape, Size).
bool needs_only_shapes(const ir::Op& op);

/// Evaluates `op`. `inputs` has one entry per op input (null for an omitted one); each present
/// input carries its values in Tensor::data, except for the ops needs_only_shapes() accepts,
/// which need only static shapes. `outputs` holds the static output types from
/// infer_output_types(). Returns the output tensors (values, dtype and shape; no names), nullopt
/// when this op type or element type cannot be evaluated, or an Error for invalid inputs (an
/// index out of range, an integer division by zero).
Expected<std::optional<std::vector<ir::Tensor>>> evaluate_constant(
    const ir::Op& op, std::span<const ir::Tensor* const> inputs,
    std::span<const PartialType> outputs);

}  // namespace planner::importers
