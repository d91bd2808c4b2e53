// ONNX import: .onnx protobuf files and ONNX's textual syntax (.onnxtxt) -> ir::Graph.
//
// Import runs ONNX shape inference, binds dynamic dimensions from the options, folds the
// constant shape-computing subgraphs exporters emit, and checks that every tensor shape is
// static. Weights are never read unless ImportOptions::load_weights asks for them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::importers {

/// Options for import_model. Every field has a default that plans an ordinary export.
struct ImportOptions {
  /// Value for the batch dimension: binds every dynamic dimension named like a batch
  /// ("batch", "batch_size", "N", "unk__0"-style names on the first axis of a graph input).
  std::optional<int64_t> batch;
  /// Values for named dynamic dimensions (--dim NAME=VALUE).
  std::map<std::string, int64_t> dims;
  /// Read parameter values (from the model file or its external data files). Planning never
  /// needs them; the launcher's initialisation may.
  bool load_weights = false;
  /// Fold constant shape-computing subgraphs (Shape -> Gather -> ... -> Reshape etc.).
  bool fold_constants = true;
};

/// Loads a model. The format is chosen by extension: ".onnxtxt"/".txt" is ONNX's textual
/// syntax, anything else the protobuf encoding. Errors name the file and, where there is one,
/// the node: "model.onnx: node 'conv1' (Conv): input 'w' is not defined".
Expected<ir::Graph> import_model(const std::string& path, const ImportOptions& options = {});

/// Parses a model from ONNX textual syntax held in memory (for tests and examples);
/// `source_name` is used in error messages.
Expected<ir::Graph> import_model_text(const std::string& text, const std::string& source_name,
                                      const ImportOptions& options = {});

}  // namespace planner::importers
