// ONNX import: .onnx protobuf files and ONNX's textual syntax (.onnxtxt) -> ir::Graph.
//
// Import runs ONNX shape inference, binds dynamic dimensions from the options, folds the
// constant shape-computing subgraphs exporters emit (importers/fold_constants.h), and checks
// that every tensor shape is static. Weights are never read unless ImportOptions::load_weights
// asks for them. docs/models.md describes roles, external data and the textual-syntax
// convention (weights are initializers declared without values, `float[1024,1024] w = {}`).
//
// Supported: IR versions 3 to 8, default-domain opsets 7 to 17 (ONNX 1.12).
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
  /// With `batch` set: a model whose inputs have no dynamic batch dimension is an error
  /// ("--batch N: the model's inputs have no dynamic batch dimension to bind"); false ignores
  /// `batch` there (a batch read back from a plan file).
  bool batch_must_bind = true;
  /// Values for named dynamic dimensions (--dim NAME=VALUE).
  std::map<std::string, int64_t> dims;
  /// Dimensions replaced before anything else (--shrink OLD=NEW; importers/shrink.h): the
  /// same operators on smaller tensors.
  std::map<int64_t, int64_t> shrink;
  /// Read parameter values (from the model file or its external data files) into
  /// Tensor::data. Planning never needs them; the launcher's initialisation may. A missing or
  /// short external data file is then an error. Parameters declared without values (the
  /// textual-syntax convention) stay without data.
  bool load_weights = false;
  /// Fold constant shape-computing subgraphs (Shape -> Gather -> ... -> Reshape etc.).
  bool fold_constants = true;
  /// Keep Linear layers that exporters flatten into rows around a Gemm in their leading
  /// dimensions (importers/unflatten_linear.h: batch-first attention's output projection), so
  /// a batch split passes them. False imports exactly the file's operators and shapes.
  bool unflatten_linear = true;
  /// Import layer normalisation spelled in element-wise operators (exporters below opset 17)
  /// as one LayerNormalization, as frameworks run it (importers/fuse_layer_norm.h). False
  /// imports exactly the file's operators.
  bool fuse_layer_norm = true;
};

/// Loads a model. The format is chosen by extension: ".onnxtxt"/".txt" is ONNX's textual
/// syntax, anything else the protobuf encoding. Errors are one line naming the file and, where
/// there is one, the node: "model.onnx: node 'conv1' (Conv): input 'w' is not defined".
///
/// The result is finalized: graph inputs are kInput, floating-point initializers kParameter
/// (with ExternalData where stored outside the file), integer/bool initializers and folded
/// results kConstant with their values; every shape is static; unnamed nodes are named
/// "<OpType>_<node index>". External data locations outside the model's folder are rejected.
Expected<ir::Graph> import_model(const std::string& path, const ImportOptions& options = {});

/// Parses a model from ONNX textual syntax held in memory (for tests and examples);
/// `source_name` is used in error messages, and its folder is where external data would be
/// looked for. A missing ir_version means the current one (8).
Expected<ir::Graph> import_model_text(const std::string& text, const std::string& source_name,
                                      const ImportOptions& options = {});

/// Reads one ONNX TensorProto file (as the ONNX test suite's input_N.pb and output_N.pb): its
/// name, type, shape and values. Errors name the file.
Expected<ir::Tensor> read_tensor_file(const std::string& path);

}  // namespace planner::importers
