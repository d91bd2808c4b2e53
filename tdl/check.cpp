// Semantic checks of parsed TDL definitions.
#include "tdl/check.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace planner::tdl {
namespace {

constexpr const char* kUnaryFunctions[] = {
    "exp",      "log",  "tanh", "sigmoid", "sqrt",  "rsqrt", "erf",     "abs",   "neg",
    "relu",     "sin",  "cos",  "tan",     "floor", "ceil",  "round",   "sign",  "reciprocal",
    "asin",     "acos", "atan", "sinh",    "cosh",  "asinh", "acosh",   "atanh", "softplus",
    "softsign", "gelu", "cast", "isnan",   "isinf", "not_",  "identity"};
constexpr const char* kBinaryFunctions[] = {"pow", "max2", "min2", "mod", "atan2"};
constexpr const char* kRemapFunctions[] = {"reshape", "concat", "split",
                                           "slice",   "pad",    "transpose"};

template <size_t N>
bool in(const char* const (&table)[N], std::string_view name) {
  return std::find(std::begin(table), std::end(table), name) != std::end(table);
}

// Shape of a declaration for rank checks: fixed dimensions and group names in order.
struct DeclShape {
  int fixed = 0;
  std::vector<std::string> groups;
};

class OpChecker {
 public:
  OpChecker(const Source& source, const OpDef& op) : source_(source), op_(op) {}

  Expected<void> run() {
    std::set<std::string> seen;
    for (const auto& attr : op_.attrs) {
      if (!seen.insert(attr.name).second)
        return error(attr.loc, fmt::format("attribute '{}' is declared twice", attr.name));
      attrs_.insert(attr.name);
    }
    std::set<std::string> tensors;
    for (const auto& input : op_.inputs) {
      if (!tensors.insert(input.name).second)
        return error(input.loc, fmt::format("tensor '{}' is declared twice", input.name));
      PLANNER_TRY(check_dims(input.dims, input.name, /*allow_groups=*/true));
      if (input.has_view) PLANNER_TRY(check_dims(input.view, input.name, /*allow_groups=*/false));
    }
    for (const auto& input : op_.inputs) {
      PLANNER_TRY(check_size_exprs(input.dims));
      if (input.has_view) PLANNER_TRY(check_size_exprs(input.view));
    }
    for (const auto& output : op_.outputs) {
      if (!tensors.insert(output.name).second)
        return error(output.loc, fmt::format("tensor '{}' is declared twice", output.name));
      std::set<std::string> vars;
      for (const auto& dim : output.dims) {
        // A group only in the output is allowed: its size comes from the node's output.
        if (dim.is_group) continue;
        if (is_size_name(dim.name))
          return error(
              dim.loc,
              fmt::format("index variable '{}' must start with a lower-case letter", dim.name));
        if (attrs_.count(dim.name))
          return error(dim.loc,
                       fmt::format("index variable '{}' has the name of an attribute", dim.name));
        if (!vars.insert(dim.name).second)
          return error(dim.loc, fmt::format("index variable '{}' is bound twice", dim.name));
        if (dim.extent) PLANNER_TRY(check_constant(*dim.extent, "an output extent"));
      }
    }
    if (op_.guard) PLANNER_TRY(check_guard(*op_.guard));
    for (size_t k = 0; k < op_.bodies.size(); ++k) {
      const OutputDecl& output = op_.outputs[k];
      std::vector<std::string> scope;
      std::set<std::string> groups;
      for (const auto& dim : output.dims) {
        if (dim.is_group)
          groups.insert(dim.name);
        else
          scope.push_back(dim.name);
      }
      out_groups_ = groups;
      PLANNER_TRY(check_value(*op_.bodies[k], scope));
    }
    return ok();
  }

 private:
  Error error(SourceLoc loc, std::string_view message) const {
    return located_error(source_, loc, fmt::format("operator '{}': {}", op_.name, message));
  }

  Expected<void> check_dims(const std::vector<DimDecl>& dims, const std::string& input,
                            bool allow_groups) {
    std::set<std::string> local_groups;
    for (const auto& dim : dims) {
      switch (dim.kind) {
        case DimDecl::Kind::kGroup:
          if (!allow_groups) return error(dim.loc, "a view cannot contain an ellipsis group");
          if (!local_groups.insert(dim.name).second)
            return error(dim.loc, fmt::format("group '{}' appears twice in input '{}'",
                                              dim.name.empty() ? "..." : ".." + dim.name, input));
          groups_.insert(dim.name);
          break;
        case DimDecl::Kind::kSize:
          if (!is_size_name(dim.name))
            return error(
                dim.loc,
                fmt::format("dimension '{}' of input '{}' must be a size (an upper-case name)",
                            dim.name, input));
          sizes_.insert(dim.name);
          if (!dim.axis_attr.empty() && !attrs_.count(dim.axis_attr))
            return error(dim.loc, fmt::format("unknown attribute '{}' after '@'", dim.axis_attr));
          break;
        case DimDecl::Kind::kInt:
          if (dim.value < 0) return error(dim.loc, "a dimension size cannot be negative");
          break;
        case DimDecl::Kind::kExpr:
          break;  // checked once every size is known
      }
    }
    return ok();
  }

  Expected<void> check_size_exprs(const std::vector<DimDecl>& dims) {
    for (const auto& dim : dims)
      if (dim.kind == DimDecl::Kind::kExpr) PLANNER_TRY(check_constant(*dim.expr, "a dimension"));
    return ok();
  }

  // Expressions made of literals, sizes and attributes (extents, dimension expressions).
  Expected<void> check_constant(const Expr& e, std::string_view what) {
    switch (e.kind) {
      case ExprKind::kInt:
      case ExprKind::kFloat:
        return ok();
      case ExprKind::kName:
        if (attrs_.count(e.name)) return ok();
        if (is_size_name(e.name)) {
          if (sizes_.count(e.name)) return ok();
          return error(e.loc, fmt::format("unknown size '{}'", e.name));
        }
        return error(e.loc, fmt::format("'{}' is not a size or an attribute; {} may use only those",
                                        e.name, what));
      case ExprKind::kAccess:
        if (attrs_.count(e.name)) {
          for (const auto& a : e.args) PLANNER_TRY(check_constant(*a, what));
          return ok();
        }
        return error(e.loc, fmt::format("{} cannot read tensor elements", what));
      case ExprKind::kCall:
        if (e.name == "len" || e.name == "rank") return check_query(e);
        if (e.name == "max2" || e.name == "min2") {
          for (const auto& a : e.args) PLANNER_TRY(check_constant(*a, what));
          return ok();
        }
        return error(e.loc, fmt::format("function '{}' is not allowed in {}", e.name, what));
      case ExprKind::kUnary:
      case ExprKind::kBinary:
        for (const auto& a : e.args) PLANNER_TRY(check_constant(*a, what));
        return ok();
      default:
        return error(e.loc, fmt::format("unexpected '{}' in {}", to_string(e), what));
    }
  }

  Expected<void> check_query(const Expr& e) {
    if (e.args.size() != 1 || e.args[0]->kind != ExprKind::kName)
      return error(e.loc, fmt::format("'{}' takes one name", e.name));
    const std::string& name = e.args[0]->name;
    if (e.name == "rank" && !op_.find_input(name))
      return error(e.args[0]->loc, fmt::format("unknown tensor '{}'", name));
    if (e.name == "len" && !attrs_.count(name))
      return error(e.args[0]->loc, fmt::format("unknown attribute '{}'", name));
    return ok();
  }

  Expected<void> check_guard(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kInt:
      case ExprKind::kFloat:
      case ExprKind::kString:
        return ok();
      case ExprKind::kName:
        if (attrs_.count(e.name)) return ok();
        return error(e.loc, fmt::format("unknown attribute '{}' in guard", e.name));
      case ExprKind::kAccess:
        if (!attrs_.count(e.name))
          return error(e.loc, fmt::format("unknown attribute '{}' in guard", e.name));
        for (const auto& a : e.args) PLANNER_TRY(check_guard(*a));
        return ok();
      case ExprKind::kCall:
        if (e.name == "rank" || e.name == "len") return check_query(e);
        return error(e.loc, fmt::format("function '{}' is not allowed in a guard", e.name));
      case ExprKind::kUnary:
      case ExprKind::kBinary:
      case ExprKind::kList:
        for (const auto& a : e.args) PLANNER_TRY(check_guard(*a));
        return ok();
      default:
        return error(e.loc, fmt::format("unexpected '{}' in guard", to_string(e)));
    }
  }

  bool is_var(const std::vector<std::string>& scope, const std::string& name) const {
    return std::find(scope.begin(), scope.end(), name) != scope.end();
  }

  Error unknown_name(const Expr& e) const {
    if (op_.find_input(e.name) || op_.find_output(e.name))
      return error(e.loc, fmt::format("tensor '{}' is used without indices", e.name));
    if (is_size_name(e.name)) return error(e.loc, fmt::format("unknown size '{}'", e.name));
    return error(e.loc, fmt::format("unbound index variable '{}'", e.name));
  }

  Expected<DeclShape> decl_shape(const Expr& access) const {
    DeclShape shape;
    auto add_dims = [&](const std::vector<DimDecl>& dims) {
      for (const auto& d : dims) {
        if (d.kind == DimDecl::Kind::kGroup)
          shape.groups.push_back(d.name);
        else
          ++shape.fixed;
      }
    };
    if (const InputDecl* input = op_.find_input(access.name)) {
      add_dims(input->has_view ? input->view : input->dims);
      return shape;
    }
    if (const OutputDecl* output = op_.find_output(access.name)) {
      for (const auto& d : output->dims) {
        if (d.is_group)
          shape.groups.push_back(d.name);
        else
          ++shape.fixed;
      }
      return shape;
    }
    return error(access.loc, fmt::format("unknown tensor '{}'", access.name));
  }

  // For each declared dimension of `tensor` (its view for viewed inputs): is it a group?
  std::vector<bool> declared_group_positions(const std::string& tensor) const {
    std::vector<bool> result;
    if (const InputDecl* input = op_.find_input(tensor)) {
      for (const auto& d : input->has_view ? input->view : input->dims)
        result.push_back(d.kind == DimDecl::Kind::kGroup);
    } else if (const OutputDecl* output = op_.find_output(tensor)) {
      for (const auto& d : output->dims) result.push_back(d.is_group);
    }
    return result;
  }

  Expected<void> check_access(const Expr& e, const std::vector<std::string>& scope) {
    PLANNER_TRY_ASSIGN(DeclShape shape, decl_shape(e));
    if (const InputDecl* input = op_.find_input(e.name); input && input->variadic)
      return error(e.loc,
                   fmt::format("variadic input '{}' can only be read through concat({}, axis)",
                               e.name, e.name));
    int fixed = 0;
    std::vector<std::string> groups;
    for (const auto& index : e.args) {
      if (index->kind == ExprKind::kGroup) {
        groups.push_back(index->name);
        if (!out_groups_.count(index->name) && !groups_.count(index->name))
          return error(index->loc, fmt::format("unknown group '{}'",
                                               index->name.empty() ? "..." : ".." + index->name));
        continue;
      }
      ++fixed;
      if (index->kind == ExprKind::kWhole) continue;
      auto affine = check_affine(*index, *index, scope);
      if (!affine) return affine.error();
    }
    // An input declared as one bare group (`C[..c]`) may be read with plain indices: the
    // access is right-aligned to the input's actual rank, numpy style (Gemm's bias).
    bool broadcast_read = shape.fixed == 0 && shape.groups.size() == 1 && groups.empty();
    if (!broadcast_read && (fixed != shape.fixed || groups.size() != shape.groups.size())) {
      std::string declared =
          shape.groups.empty()
              ? fmt::format("{} dimension{}", shape.fixed, shape.fixed == 1 ? "" : "s")
              : fmt::format("{} dimension{} and {} group{}", shape.fixed,
                            shape.fixed == 1 ? "" : "s", shape.groups.size(),
                            shape.groups.size() == 1 ? "" : "s");
      std::string used =
          groups.empty() ? fmt::format("{} ind{}", fixed, fixed == 1 ? "ex" : "ices")
                         : fmt::format("{} ind{} and {} group{}", fixed, fixed == 1 ? "ex" : "ices",
                                       groups.size(), groups.size() == 1 ? "" : "s");
      return error(e.loc,
                   fmt::format("'{}' has {} but is indexed with {}", e.name, declared, used));
    }
    if (!broadcast_read) {
      // Groups must sit where the declaration has them, so each index meets its dimension.
      std::vector<bool> decl_is_group = declared_group_positions(e.name);
      for (size_t k = 0; k < e.args.size() && k < decl_is_group.size(); ++k) {
        if ((e.args[k]->kind == ExprKind::kGroup) != decl_is_group[k])
          return error(e.args[k]->loc,
                       fmt::format("index {} of '{}' is {} but the declaration has {} there", k + 1,
                                   e.name, decl_is_group[k] ? "not a group" : "a group",
                                   decl_is_group[k] ? "a group" : "a dimension"));
      }
    }
    return ok();
  }

  // Returns whether `e` depends on an index variable; errors for non-affine forms.
  Expected<bool> check_affine(const Expr& e, const Expr& index,
                              const std::vector<std::string>& scope) {
    auto non_affine = [&](std::string_view why) {
      return error(start_loc(index),
                   fmt::format("non-affine index '{}': {}", to_string(index), why));
    };
    switch (e.kind) {
      case ExprKind::kInt:
        return false;
      case ExprKind::kFloat:
        return non_affine("indices are integers");
      case ExprKind::kName:
        if (is_var(scope, e.name)) return true;
        if (attrs_.count(e.name) || sizes_.count(e.name)) return false;
        return unknown_name(e);
      case ExprKind::kAccess:
        if (attrs_.count(e.name)) return false;
        if (op_.find_input(e.name) || op_.find_output(e.name))
          return non_affine("an index cannot read a tensor");
        return error(e.loc, fmt::format("unknown tensor '{}'", e.name));
      case ExprKind::kUnary: {
        if (e.name != "-") return non_affine(fmt::format("'{}' of an index", e.name));
        return check_affine(*e.args[0], index, scope);
      }
      case ExprKind::kBinary: {
        PLANNER_TRY_ASSIGN(bool lhs, check_affine(*e.args[0], index, scope));
        PLANNER_TRY_ASSIGN(bool rhs, check_affine(*e.args[1], index, scope));
        const std::string& op = e.name;
        if (op == "+" || op == "-") return lhs || rhs;
        if (op == "*") {
          if (lhs && rhs) return non_affine("a product of index variables");
          return lhs || rhs;
        }
        if (op == "/" || op == "%") {
          if (rhs) return non_affine(fmt::format("'{}' by an index variable", op));
          return lhs;
        }
        return non_affine(fmt::format("operator '{}'", op));
      }
      case ExprKind::kCall: {
        if (e.name == "len" || e.name == "rank") {
          PLANNER_TRY(check_query(e));
          return false;
        }
        for (const auto& a : e.args) {
          PLANNER_TRY_ASSIGN(bool has_var, check_affine(*a, index, scope));
          if (has_var) return non_affine(fmt::format("function '{}' of an index variable", e.name));
        }
        return false;
      }
      default:
        return non_affine("not an arithmetic expression");
    }
  }

  Expected<void> check_value(const Expr& e, std::vector<std::string>& scope) {
    switch (e.kind) {
      case ExprKind::kInt:
      case ExprKind::kFloat:
      case ExprKind::kString:
        return ok();
      case ExprKind::kName:
        if (is_var(scope, e.name) || attrs_.count(e.name) || sizes_.count(e.name)) return ok();
        return unknown_name(e);
      case ExprKind::kAccess:
        if (attrs_.count(e.name)) {
          for (const auto& a : e.args) PLANNER_TRY(check_constant(*a, "an attribute index"));
          return ok();
        }
        return check_access(e, scope);
      case ExprKind::kWhole:
        return error(e.loc, "':' (a whole dimension) is only allowed as an index");
      case ExprKind::kGroup:
        return error(e.loc, "an ellipsis group is only allowed as an index");
      case ExprKind::kList:
      case ExprKind::kUnary:
      case ExprKind::kBinary:
        for (const auto& a : e.args) PLANNER_TRY(check_value(*a, scope));
        return ok();
      case ExprKind::kCall:
        return check_call(e, scope);
      case ExprKind::kReduce: {
        size_t old_size = scope.size();
        for (size_t i = 0; i < e.vars.size(); ++i) {
          const std::string& var = e.vars[i];
          if (is_var(scope, var))
            return error(e.var_locs[i], fmt::format("index variable '{}' is bound twice", var));
          if (is_size_name(var) || attrs_.count(var))
            return error(
                e.var_locs[i],
                fmt::format("'{}' cannot be a reduction variable (it names a size or an attribute)",
                            var));
          if (i < e.var_extents.size() && e.var_extents[i])
            PLANNER_TRY(check_constant(*e.var_extents[i], "a reduction extent"));
          scope.push_back(var);
        }
        PLANNER_TRY(check_value(*e.args[0], scope));
        for (size_t i = 0; i < e.vars.size(); ++i) {
          if (!uses_name(*e.args[0], e.vars[i]))
            return error(e.var_locs[i],
                         fmt::format("reduction variable '{}' is not used", e.vars[i]));
        }
        scope.resize(old_size);
        return ok();
      }
    }
    return ok();
  }

  static bool uses_name(const Expr& e, const std::string& name) {
    if (e.kind == ExprKind::kName && e.name == name) return true;
    for (const auto& a : e.args)
      if (uses_name(*a, name)) return true;
    return false;
  }

  Expected<void> check_call(const Expr& e, std::vector<std::string>& scope) {
    auto arity = [&](size_t n) -> Expected<void> {
      if (e.args.size() == n) return ok();
      return error(e.loc, fmt::format("function '{}' takes {} argument{}, got {}", e.name, n,
                                      n == 1 ? "" : "s", e.args.size()));
    };
    if (in(kUnaryFunctions, e.name))
      PLANNER_TRY(arity(1));
    else if (in(kBinaryFunctions, e.name))
      PLANNER_TRY(arity(2));
    else if (e.name == "select")
      PLANNER_TRY(arity(3));
    else if (e.name == "len" || e.name == "rank")
      return check_query(e);
    else if (in(kRemapFunctions, e.name)) {
      if (e.args.empty() || e.args[0]->kind != ExprKind::kName || !op_.find_input(e.args[0]->name))
        return error(e.loc,
                     fmt::format("'{}' takes an input tensor name as its first argument", e.name));
      for (size_t i = 1; i < e.args.size(); ++i)
        PLANNER_TRY(check_constant(*e.args[i], fmt::format("'{}'", e.name)));
      return ok();
    } else if (e.name == "opaque") {
      if (e.args.empty()) return error(e.loc, "'opaque' needs at least one argument");
    } else if (e.name == "sum" || e.name == "max" || e.name == "min" || e.name == "prod") {
      return error(e.loc,
                   fmt::format("reduction '{}' needs its variables: {}(k: ...)", e.name, e.name));
    } else {
      return error(e.loc, fmt::format("unknown function '{}'", e.name));
    }
    for (const auto& a : e.args) PLANNER_TRY(check_value(*a, scope));
    return ok();
  }

  const Source& source_;
  const OpDef& op_;
  std::set<std::string> attrs_;
  std::set<std::string> sizes_;
  std::set<std::string> groups_;
  std::set<std::string> out_groups_;
};

}  // namespace

bool is_unary_function(std::string_view name) {
  return in(kUnaryFunctions, name);
}
bool is_remap_function(std::string_view name) {
  return in(kRemapFunctions, name);
}

SourceLoc start_loc(const Expr& expr) {
  if ((expr.kind == ExprKind::kBinary) && !expr.args.empty()) return start_loc(*expr.args[0]);
  return expr.loc;
}

Expected<void> check_file(const File& file) {
  for (const auto& op : file.ops) {
    OpChecker checker(*file.source, op);
    PLANNER_TRY(checker.run());
  }
  return ok();
}

}  // namespace planner::tdl
