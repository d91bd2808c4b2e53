// Constant folding and static-shape completion: the import pass that turns an exported graph
// into one holding only real tensor computation, every shape static.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "importers/shape_rules.h"
#include "ir/graph.h"
#include "support/expected.h"

namespace planner::importers {

/// Options for fold_constants.
struct FoldOptions {
  /// Replace ops whose outputs are constants (Constant nodes, Shape of a static tensor, and
  /// everything computed only from constants) by kConstant tensors, and remove ops whose results
  /// no graph output needs. When false, the graph keeps its ops; shapes are still completed.
  bool fold = true;
  /// Largest constant (in elements) folding materialises; bigger constant results stay ops.
  int64_t max_folded_elements = int64_t{1} << 22;
  /// Reads the values of a kConstant tensor that has none yet (its bytes live in an external
  /// data file); called only when folding needs them. Null: such tensors are never folded.
  std::function<Expected<void>(ir::Tensor&)> load_data;
};

/// What folding did, for logs.
struct FoldStats {
  int folded_ops = 0;  ///< ops evaluated at import time and replaced by constants
  int dead_ops = 0;    ///< ops removed because no graph output needs them
};

/// Folds constant subgraphs of `graph` and completes its shapes, in one pass in topological
/// order, since folding makes shapes known (a Slice's bounds) and known shapes make more folding
/// possible (Shape of that Slice's output).
///
/// Preconditions: `graph` is finalized; graph inputs, parameters and constants have static
/// shapes. `inferred[t]` is what ONNX shape inference found for tensor t; `declared[t]` what the
/// model's value_info says (both indexed by tensor id, num_tensors() entries). For each op
/// output, ONNX's result is used when it is static, the importer's own rules (shape_rules.h)
/// otherwise, and the declared type only where neither can tell.
///
/// Afterwards every tensor has a static shape (or an Error names the node whose output could
/// not be inferred, with `source` in front), folded results are kConstant tensors with their
/// values in Tensor::data, and dead ops are gone. Ids change: call Graph::finalize() again.
Expected<FoldStats> fold_constants(ir::Graph& graph, std::vector<PartialType> inferred,
                                   const std::vector<PartialType>& declared,
                                   const FoldOptions& options, const std::string& source);

}  // namespace planner::importers
