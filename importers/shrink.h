// Shrinking a model's dimensions (`--shrink OLD=NEW`): the same operators on smaller tensors,
// so that a plan of a large model can be checked end to end in seconds (planner verify on the
// cpu backend). A pass on the ONNX model, before the importer binds dimensions and infers
// shapes, which then recomputes every shape and rejects a map that does not fit.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "support/expected.h"

namespace onnx {
class ModelProto;
}

namespace planner::importers {

/// Replaces every dimension OLD by `dims[OLD]`, all at once (a map {768: 96, 96: 24} sends 768
/// to 96 and 96 to 24):
/// - in the shapes of the graph inputs and outputs, and of the initializers and Constant
///   tensors (declared value_info is dropped: the importer infers it again);
/// - in the values of the integer constants that hold extents: Reshape's and Expand's shape,
///   ConstantOfShape's input, Split's sizes (input or attribute; their own length stays);
/// - in the hidden_size of LSTM, GRU and RNN.
/// A tensor with values whose shape changes keeps its leading block (a causal mask stays
/// causal, positions stay 0, 1, 2, …); one stored outside the file (external data) loses its
/// values, as parameters need none to plan. Errors: a non-positive value, a tensor with values
/// that would grow, and data of a type whose element size is unknown; each names the tensor.
Expected<void> shrink_model(onnx::ModelProto& model, const std::map<int64_t, int64_t>& dims,
                            const std::string& source);

}  // namespace planner::importers
