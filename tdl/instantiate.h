// Instantiation: a rank-polymorphic, attribute-driven TDL description plus one concrete
// operator (a request) becomes a fixed-rank core description (an Instance) for the analysis.
//
// API:
//   InstanceRequest req{.op_type = "Conv", .node_name = "conv1", .attributes = {...},
//                       .inputs = {{true, {8, 3, 32, 32}}, ...}, .outputs = {{true, {...}}}};
//   Expected<Instance> inst = instantiate(variants, req);   // variants: every OpDef of that name
//   Expected<Instance> alone = instantiate_standalone(op, {{"N", 12}});  // `tdl show`, `--sizes`
// An Instance has no ellipsis groups, no attributes (substituted by their values), no absent
// inputs, no remaps (expanded into affine accesses) and unique reduction variables. Accesses
// name instance inputs or outputs and have one index per dimension (of the view when the input
// has one). Sizes are named symbols; `sizes` holds the concrete value of each one known.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/expected.h"
#include "tdl/ast.h"

namespace planner::tdl {

/// One input of the operator to instantiate for.
struct InstanceInput {
  bool present = true;                         ///< false: an omitted optional input
  std::vector<int64_t> shape;                  ///< static shape; {} is a scalar
  std::optional<std::vector<int64_t>> values;  ///< integer contents of a constant input, when known
};

/// One output of the operator to instantiate for.
struct InstanceOutput {
  bool present = true;  ///< false: an omitted optional output
  std::vector<int64_t> shape;
};

/// A concrete operator, described without the graph IR (analysis/op_strategies builds it).
struct InstanceRequest {
  std::string op_type;                          ///< e.g. "Conv"
  std::string domain;                           ///< "" for the default ONNX domain
  std::string node_name;                        ///< used in messages
  std::map<std::string, AttrValue> attributes;  ///< the node's attributes (defaults are filled in)
  std::vector<InstanceInput> inputs;            ///< in node order
  std::vector<InstanceOutput> outputs;          ///< in node order
};

/// An input of an Instance.
struct InstanceTensor {
  std::string name;  ///< unique within the instance (variadic inputs: `inputs_0`, `inputs_1`, ...)
  int node_index =
      0;  ///< position in the node's inputs (in the description for standalone instances)
  std::vector<ExprPtr> dims;  ///< declared sizes: size symbols, integers or expressions of sizes
  bool has_view = false;      ///< accesses index `view` instead of `dims`
  std::vector<ExprPtr>
      view;  ///< the view's sizes; their product per run equals the dims (row-major)
  const std::vector<ExprPtr>& access_dims() const { return has_view ? view : dims; }
};

/// An output of an Instance.
struct InstanceOutputTensor {
  std::string name;     ///< unique within the instance (variadic outputs: `outputs_0`, ...)
  int node_index = 0;   ///< position in the node's outputs
  bool present = true;  ///< false: the node omits this output (it may still be read as state)
  std::vector<std::string> vars;  ///< index variables, one per dimension
  std::vector<ExprPtr> extents;   ///< explicit extent per dimension (null: follows from the body)
  std::optional<std::vector<int64_t>>
      shape;  ///< the node's output shape, when instantiated for a node
};

/// A fixed-rank core description (see the file comment for its invariants).
struct Instance {
  std::string op_type;
  std::string domain;
  std::string node_name;                      ///< empty for standalone instances
  std::string variant;                        ///< where the chosen definition is: `file:line`
  std::vector<InstanceTensor> inputs;         ///< present inputs only
  std::vector<InstanceOutputTensor> outputs;  ///< every output, with `present`
  std::vector<ExprPtr> bodies;                ///< one per output
  std::vector<std::string> symbols;           ///< every size symbol, in order of first declaration
  std::map<std::string, int64_t> sizes;       ///< concrete values of size symbols, where known

  /// True when every size symbol has a concrete value.
  bool concrete() const;
  /// `op_type` with the node name: `node 'conv1' (Conv)` or `Conv` when standalone.
  std::string label() const;
  /// Index of the input or output with this name, or -1.
  int find_input(std::string_view name) const;
  int find_output(std::string_view name) const;
};

/// Picks the first variant whose guard holds and whose input ranks match `request`, fills
/// attribute defaults, expands groups, placements, broadcasting and remaps, and binds sizes.
/// `variants` are the definitions sharing the op's name, in file order. `source` names the
/// file the variants come from (for `variant`); may be null.
Expected<Instance> instantiate(const std::vector<const OpDef*>& variants,
                               const InstanceRequest& request, const Source* source = nullptr);

/// Instantiates one definition without a node: ellipsis groups are empty, attributes take
/// their defaults (overridden by `attributes`; a required one missing is an error), and the
/// sizes in `sizes` are bound (the rest stay symbolic). Remaps need a node and fail here.
Expected<Instance> instantiate_standalone(const OpDef& op,
                                          const std::map<std::string, int64_t>& sizes = {},
                                          const std::map<std::string, AttrValue>& attributes = {},
                                          const Source* source = nullptr);

/// The instance in TDL syntax, one line per output, with the bound sizes:
/// `op ShiftTwo(A[N]) -> B[i] = A[i + 2]   # N = 12`.
std::string to_string(const Instance& instance);

}  // namespace planner::tdl
