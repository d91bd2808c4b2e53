// Output element types and shapes of ONNX operators, computed by the importer itself.
//
// ONNX's own shape inference leaves shapes unknown where they depend on values it cannot see
// (a Slice whose bounds come from Shape -> Gather -> Div chains, a Reshape of a computed shape).
// Constant folding makes those values known; these rules then give the static shapes. They also
// cover ops whose inputs only became static after folding.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::importers {

/// A dimension whose extent is not known yet.
inline constexpr int64_t kUnknownDim = -1;

/// What import knows about a tensor's type: either part may be unknown.
struct PartialType {
  std::optional<ir::DType> dtype;
  /// nullopt: the rank is unknown; otherwise one entry per axis, kUnknownDim where unknown.
  std::optional<std::vector<int64_t>> dims;

  /// True when the rank and every dimension are known.
  bool is_static() const;
  /// Fills the unknown parts of this type from `other` (known parts win).
  void merge_from(const PartialType& other);
};

/// The types of `op`'s outputs (one entry per output, kNoTensor outputs included) from its
/// inputs' types and, where known, their values (`values[i]` is null when input i is not a
/// constant or is omitted; `inputs` has one entry per op input). Entries stay unknown where the
/// op has no rule or its inputs are not known well enough. Returns an Error (without node
/// context, which the caller adds) when the inputs are inconsistent, e.g. a MatMul whose inner
/// dimensions differ.
Expected<std::vector<PartialType>> infer_output_types(const ir::Op& op,
                                                      std::span<const PartialType> inputs,
                                                      std::span<const ir::Tensor* const> values);

}  // namespace planner::importers
