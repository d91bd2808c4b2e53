// The graph IR every stage of the planner shares: tensors, operators and the graph that
// owns them, with topological order, validation and a compact text form.
//
// A Graph is a plain value: importers build it, later stages read it (and the training-graph
// pass extends it). Ids are indices into the graph's vectors, so iteration order is the order
// of construction, which importers make deterministic (model order).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "support/expected.h"

namespace planner::ir {

using TensorId = int32_t;
using OpId = int32_t;
inline constexpr TensorId kNoTensor = -1;  ///< an omitted optional input or output
inline constexpr OpId kNoOp = -1;          ///< no producer (graph input, parameter, constant)

/// What a tensor is for; decides how it is counted (parameters vs activations) and planned.
enum class TensorRole : uint8_t {
  kInput,           ///< a model input fed every step (tokens, images, RNN initial state)
  kParameter,       ///< a trainable weight (an ONNX initializer that is not a graph constant)
  kActivation,      ///< computed by an operator
  kConstant,        ///< a non-trainable constant (shape vectors, masks, axes) with known values
  kOptimizerState,  ///< optimizer state kept across steps (momentum, Adam moments)
};

std::string_view role_name(TensorRole role);

/// Where a parameter's bytes live when they are not inside the model file itself.
struct ExternalData {
  std::string location;  ///< path relative to the model's folder (checked not to escape it)
  int64_t offset = 0;
  int64_t length = -1;  ///< -1: to the end of the file
};

/// A tensor: a named, typed, statically shaped value.
struct Tensor {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  ///< static, every dimension >= 0; {} is a scalar
  TensorRole role = TensorRole::kActivation;
  OpId producer = kNoOp;        ///< filled by Graph::finalize()
  std::vector<OpId> consumers;  ///< filled by Graph::finalize(), ascending, one entry per use

  /// Values of small constants (shape vectors, axes, scalars) as raw little-endian bytes in
  /// `dtype`; empty when unknown or not loaded. Parameters never carry data here unless a later
  /// stage asked for weights (see importers/onnx_import.h).
  std::vector<uint8_t> data;
  std::optional<ExternalData> external;  ///< set for parameters stored outside the model file

  int64_t num_elements() const;
  int64_t num_bytes() const { return num_elements() * dtype_size(dtype); }
  int rank() const { return static_cast<int>(shape.size()); }
  bool has_data() const { return !data.empty(); }

  /// The constant's values converted to int64 (for integer and float dtypes); requires data.
  std::vector<int64_t> int_values() const;
  /// The constant's values converted to double; requires data.
  std::vector<double> float_values() const;
};

/// An operator attribute (ONNX's AttributeProto, minus graphs). Tensor-valued attributes are
/// kept as a Tensor value.
struct Attribute {
  using Value =
      std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                   std::vector<std::string>, std::shared_ptr<const Tensor>>;
  Value value;

  bool is_int() const { return std::holds_alternative<int64_t>(value); }
  bool is_float() const { return std::holds_alternative<double>(value); }
  bool is_string() const { return std::holds_alternative<std::string>(value); }
  bool is_ints() const { return std::holds_alternative<std::vector<int64_t>>(value); }
  bool is_floats() const { return std::holds_alternative<std::vector<double>>(value); }
  bool is_tensor() const { return std::holds_alternative<std::shared_ptr<const Tensor>>(value); }

  /// Canonical short text, e.g. `3`, `0.5`, `"SAME"`, `[1,1]`; used by the text form and as a
  /// cache key.
  std::string to_string() const;
};

/// An operator: one ONNX node.
struct Op {
  std::string name;     ///< unique within the graph (importers name unnamed nodes)
  std::string op_type;  ///< e.g. "Conv"
  std::string domain;   ///< "" for the default ONNX domain
  std::map<std::string, Attribute> attributes;  ///< sorted by name: deterministic
  std::vector<TensorId> inputs;                 ///< kNoTensor for an omitted optional input
  std::vector<TensorId> outputs;                ///< kNoTensor for an omitted optional output
  /// Ops that must finish before this one starts, though it reads nothing of theirs: the
  /// schedule of recomputation (analysis/recompute.h). Not part of ONNX; empty for imported
  /// nodes.
  std::vector<OpId> after;
  /// How the kernel running this operator is fused with its neighbours' (analysis/fusion.h,
  /// `--framework`): bit i of `fused_reads` (`fused_writes`) says input (output) i stays inside
  /// the fused kernel and moves no memory; `fused_launch` says the operator runs inside a
  /// kernel another operator launched. Pricing only: the runtime runs every operator. Zero for
  /// an operator that is its own kernel.
  uint64_t fused_reads = 0;
  uint64_t fused_writes = 0;
  bool fused_launch = false;
  /// Under --precision fp8: the operator is a linear layer's matrix product (or its gradient)
  /// run on FP8 tensor cores, its operands scaled and cast to FP8 first (analysis/precision.h).
  /// Pricing, and the runtime's operand rounding; not part of ONNX.
  bool fp8 = false;

  const Attribute* attribute(std::string_view key) const;
  int64_t int_attr(std::string_view key, int64_t fallback) const;
  double float_attr(std::string_view key, double fallback) const;
  std::string string_attr(std::string_view key, std::string_view fallback) const;
  std::vector<int64_t> ints_attr(std::string_view key, std::vector<int64_t> fallback = {}) const;
};

/// A dataflow graph. Build it with add_tensor/add_op, then call finalize(), which fills
/// producers and consumers, checks the structure and computes a topological order.
class Graph {
 public:
  std::string name;

  /// Adds a tensor; its name must be new. Returns its id.
  TensorId add_tensor(Tensor tensor);
  /// Adds an operator; its inputs and outputs must be ids of this graph. Returns its id.
  OpId add_op(Op op);

  /// Marks graph inputs and outputs (in model order).
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;

  /// Fills producers/consumers and checks: unique tensor and op names, every op input either
  /// produced by an op, a graph input, a parameter or a constant, each tensor produced at most
  /// once, no cycles, every graph output defined. `source` names the file in messages.
  Expected<void> finalize(const std::string& source = "");

  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Op>& ops() const { return ops_; }
  Tensor& tensor(TensorId id) { return tensors_.at(static_cast<size_t>(id)); }
  const Tensor& tensor(TensorId id) const { return tensors_.at(static_cast<size_t>(id)); }
  Op& op(OpId id) { return ops_.at(static_cast<size_t>(id)); }
  const Op& op(OpId id) const { return ops_.at(static_cast<size_t>(id)); }
  int num_tensors() const { return static_cast<int>(tensors_.size()); }
  int num_ops() const { return static_cast<int>(ops_.size()); }

  /// Id of the tensor or op with this name, if any.
  std::optional<TensorId> find_tensor(std::string_view name) const;
  std::optional<OpId> find_op(std::string_view name) const;

  /// Operators in a deterministic topological order (Kahn's algorithm, ties broken by id).
  /// Valid after a successful finalize().
  const std::vector<OpId>& topo_order() const { return topo_order_; }

  /// Removes the ops whose flag is set and every tensor no longer referenced (used by constant
  /// folding and dead-code elimination). Ids are renumbered; order is kept. Requires
  /// finalize() again afterwards.
  void erase_ops(const std::vector<bool>& erase);

  /// Removes tensors that no op uses and that are not graph inputs or outputs.
  void erase_unused_tensors();

 private:
  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
  std::unordered_map<std::string, TensorId> tensor_index_;
  std::unordered_map<std::string, OpId> op_index_;
  std::vector<OpId> topo_order_;
};

/// Formats a shape as `[32,3,224,224]`.
std::string shape_to_string(const std::vector<int64_t>& shape);

/// The compact text form of a graph, one line per tensor declaration and per op, in
/// topological order; stable across runs (used by --dump-after and golden tests):
///
///   graph mlp
///     input  x: f32[32,784]
///     param  w1: f32[784,512]
///     %h1: f32[32,512] = MatMul(x, w1)  # 'fc1'
///     output %y
std::string to_text(const Graph& graph);

}  // namespace planner::ir
