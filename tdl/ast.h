// The TDL syntax tree: value types for expressions, operator definitions and files.
//
// API: parse_file (tdl/parser.h) produces a File; instantiate (tdl/instantiate.h) turns one
// OpDef into a fixed-rank Instance whose bodies use the same Expr type. Expressions are
// immutable and shared (ExprPtr); copying a tree is cheap and never aliases mutable state.
// `to_string(expr)` prints an expression back in TDL syntax (used in messages and `tdl show`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tdl/source.h"

namespace planner::tdl {

/// An attribute value: what ONNX attributes and TDL attribute defaults can hold.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;

/// Canonical text of an attribute value: `3`, `0.5`, `"SAME"`, `[1, 1]`.
std::string attr_to_string(const AttrValue& value);

/// What an expression node is; see the fields of Expr for what each kind uses.
enum class ExprKind {
  kInt,     ///< integer literal (int_value)
  kFloat,   ///< floating-point literal (float_value)
  kString,  ///< string literal (name holds the text)
  kName,    ///< identifier: index variable, size, attribute or (as a call argument) tensor
  kAccess,  ///< name[args...]: tensor element, or attribute list element (`pads[0]`)
  kCall,    ///< name(args...): function (exp, opaque, select, rank, len, reshape, ...)
  kReduce,  ///< name(vars: args[0]) with name one of sum, max, min, prod
  kUnary,   ///< name is "-" or "not"; args[0] is the operand
  kBinary,  ///< name is the operator (+ - * / % == != < <= > >= and or); args[0], args[1]
  kList,    ///< [args...] (a literal list, e.g. in an attribute default)
  kWhole,   ///< ':' as an index: the whole dimension
  kGroup,   ///< '...' (name empty) or '..name' as an index: an ellipsis group
};

struct Expr;
/// Shared, immutable expression node.
using ExprPtr = std::shared_ptr<const Expr>;

/// One expression node. Only the fields its kind uses are meaningful.
struct Expr {
  ExprKind kind = ExprKind::kInt;
  SourceLoc loc;           ///< where the node starts (operator position for binaries)
  int64_t int_value = 0;   ///< kInt
  double float_value = 0;  ///< kFloat
  std::string name;  ///< identifier, tensor, function, reducer, operator, string text or group
  std::vector<ExprPtr> args;        ///< operands, indices or call arguments
  std::vector<std::string> vars;    ///< kReduce: the index variables it binds
  std::vector<SourceLoc> var_locs;  ///< kReduce: where each bound variable is written
  /// kReduce: the explicit extent of each variable (`ky < kernel_shape[0]`), null when the
  /// extent follows from the accesses.
  std::vector<ExprPtr> var_extents;
  /// Nodes on the longest path from here to a leaf (1 for a leaf). The parser bounds it
  /// (kMaxExprHeight), so recursive walks over a tree stay shallow.
  int height = 1;
};

/// The tallest expression tree the parser accepts; deeper input is a located error.
inline constexpr int kMaxExprHeight = 256;

/// Sets `e.height` from its children (args and var_extents); the builders below call it.
void update_height(Expr& e);

/// Builders for expression nodes (used by the parser and by instantiation).
ExprPtr make_int(int64_t value, SourceLoc loc = {});
ExprPtr make_float(double value, SourceLoc loc = {});
ExprPtr make_name(std::string name, SourceLoc loc = {});
ExprPtr make_unary(std::string op, ExprPtr operand, SourceLoc loc = {});
ExprPtr make_binary(std::string op, ExprPtr lhs, ExprPtr rhs, SourceLoc loc = {});
ExprPtr make_access(std::string tensor, std::vector<ExprPtr> indices, SourceLoc loc = {});
ExprPtr make_call(std::string function, std::vector<ExprPtr> args, SourceLoc loc = {});

/// Prints an expression in TDL syntax with minimal parentheses, e.g. `data[b, ci, x + dx]`.
std::string to_string(const Expr& expr);
inline std::string to_string(const ExprPtr& expr) {
  return expr ? to_string(*expr) : "<null>";
}

/// True for identifiers that name sizes (an upper-case first letter).
bool is_size_name(std::string_view name);

/// One dimension in an input declaration.
struct DimDecl {
  enum class Kind {
    kSize,   ///< a size symbol `N`, optionally placed at an attribute axis (`N @ axis`)
    kInt,    ///< a fixed size `1`
    kExpr,   ///< an expression of sizes `4 * H` (views, packed weights)
    kGroup,  ///< `...` (group "") or `..a` (group "a")
  };
  Kind kind = Kind::kSize;
  std::string name;       ///< kSize: the size; kGroup: the group name ("" for `...`)
  std::string axis_attr;  ///< kSize: the attribute after '@' (empty when not placed)
  int64_t value = 0;      ///< kInt
  ExprPtr expr;           ///< kExpr (also set for kSize and kInt: the dimension as an expression)
  SourceLoc loc;
};

/// One input declaration `name['*'][dims] ['as' [dims]] ['?']`.
struct InputDecl {
  std::string name;
  bool variadic = false;  ///< `X*[...]`: takes all remaining node inputs
  bool optional = false;  ///< `X[...]?`: the node may omit it
  std::vector<DimDecl> dims;
  bool has_view = false;      ///< `as [...]` present
  std::vector<DimDecl> view;  ///< the view's dimensions (sizes or expressions of sizes)
  SourceLoc loc;
};

/// One output dimension: an index variable (with an optional explicit extent) or a group.
struct OutDim {
  bool is_group = false;  ///< `...` or `..a`
  std::string name;       ///< the index variable, or the group name ("" for `...`)
  ExprPtr extent;         ///< `x : expr`, or null when the extent follows from the body
  SourceLoc loc;
};

/// One output declaration `name['*'][dims]`.
struct OutputDecl {
  std::string name;
  bool variadic = false;  ///< `Y*[...]`: one output per node output (Split)
  std::vector<OutDim> dims;
  SourceLoc loc;
};

/// One attribute declaration `name [= default]`.
struct AttrDecl {
  std::string name;
  std::optional<AttrValue> default_value;  ///< absent: the node must set it
  SourceLoc loc;
};

/// One `op` definition (one variant when several share a name).
struct OpDef {
  std::string name;     ///< as written, e.g. "com.microsoft.FusedMatMul"
  std::string domain;   ///< everything before the last dot ("" for the default domain)
  std::string op_type;  ///< after the last dot
  std::vector<AttrDecl> attrs;
  ExprPtr guard;  ///< `when` condition, or null
  std::vector<InputDecl> inputs;
  std::vector<OutputDecl> outputs;
  std::vector<ExprPtr> bodies;  ///< one per output
  SourceLoc loc;                ///< of the `op` keyword

  const InputDecl* find_input(std::string_view input) const;
  const OutputDecl* find_output(std::string_view output) const;
  const AttrDecl* find_attr(std::string_view attr) const;
};

/// A parsed TDL file: its source (for diagnostics) and its definitions in file order.
struct File {
  std::shared_ptr<const Source> source;
  std::vector<OpDef> ops;
};

}  // namespace planner::tdl
