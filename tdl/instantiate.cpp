// Instantiation of TDL descriptions for concrete operators (see instantiate.h).
#include "tdl/instantiate.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "tdl/check.h"

namespace planner::tdl {
namespace {

constexpr const char* kAbsent = "<absent>";

bool is_absent(const ExprPtr& e) {
  return e->kind == ExprKind::kName && e->name == kAbsent;
}

// Integer arithmetic folding, so that instantiated indices read `x - 1`, not `x * 1 + 0 - 1`.
ExprPtr fold_binary(const std::string& op, ExprPtr a, ExprPtr b, SourceLoc loc) {
  bool ai = a->kind == ExprKind::kInt, bi = b->kind == ExprKind::kInt;
  if (ai && bi) {
    int64_t x = a->int_value, y = b->int_value;
    if (op == "+") return make_int(x + y, loc);
    if (op == "-") return make_int(x - y, loc);
    if (op == "*") return make_int(x * y, loc);
    // Floor division and modulo, as everywhere in index arithmetic.
    if (op == "/" && y != 0)
      return make_int(x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0), loc);
    if (op == "%" && y != 0) return make_int(((x % y) + y) % y, loc);
  }
  if (op == "+" && bi && b->int_value < 0) return fold_binary("-", a, make_int(-b->int_value), loc);
  if (op == "-" && bi && b->int_value < 0) return fold_binary("+", a, make_int(-b->int_value), loc);
  if ((op == "+" || op == "-") && bi && b->int_value == 0) return a;
  if (op == "+" && ai && a->int_value == 0) return b;
  if ((op == "*" || op == "/") && bi && b->int_value == 1) return a;
  if (op == "*" && ai && a->int_value == 1) return b;
  return make_binary(op, std::move(a), std::move(b), loc);
}

// Turns an attribute value into a literal expression node.
struct LiteralVisitor {
  SourceLoc loc;
  ExprPtr operator()(int64_t v) const { return make_int(v, loc); }
  ExprPtr operator()(double v) const { return make_float(v, loc); }
  ExprPtr operator()(const std::string& v) const {
    auto e = std::make_shared<Expr>();
    e->kind = ExprKind::kString;
    e->name = v;
    e->loc = loc;
    return e;
  }
  template <typename T>
  ExprPtr operator()(const std::vector<T>& v) const {
    auto e = std::make_shared<Expr>();
    e->kind = ExprKind::kList;
    e->loc = loc;
    for (const auto& item : v) e->args.push_back((*this)(item));
    update_height(*e);
    return e;
  }
};

ExprPtr attr_literal(const AttrValue& value, SourceLoc loc) {
  return std::visit(LiteralVisitor{loc}, value);
}

std::optional<std::vector<int64_t>> as_ints(const AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::vector<int64_t>{*i};
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l;
  return std::nullopt;
}

// A value of a guard or attribute-index expression.
using Value = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                           std::vector<std::string>>;

std::string group_label(const std::string& g) {
  return g.empty() ? "..." : ".." + g;
}

class Instantiator {
 public:
  Instantiator(const OpDef& op, const InstanceRequest* request, const Source* source)
      : op_(op), request_(request), source_(source) {}

  std::string where() const {
    if (request_) return fmt::format("node '{}' ({})", request_->node_name, op_.name);
    return fmt::format("operator '{}'", op_.name);
  }
  Error fail(std::string_view message) const {
    return Error(fmt::format("{}: {}", where(), message));
  }

  // Step 1: attributes with defaults; a required one missing is an error.
  Expected<void> bind_attributes(const std::map<std::string, AttrValue>& given) {
    for (const auto& decl : op_.attrs) {
      auto it = given.find(decl.name);
      if (it != given.end()) {
        AttrValue v = it->second;
        // An int list declared with a float default (or vice versa) keeps the node's value.
        attrs_[decl.name] = v;
      } else if (decl.default_value) {
        attrs_[decl.name] = *decl.default_value;
      } else {
        return fail(
            fmt::format("attribute '{}' is required by the description but not set", decl.name));
      }
    }
    return ok();
  }

  // Whether the node's inputs fit this definition's declarations (count and ranks).
  bool inputs_match(std::string* why) const {
    const auto& inputs = request_->inputs;
    size_t n = inputs.size();
    size_t decl_count = op_.inputs.size();
    bool has_variadic = std::any_of(op_.inputs.begin(), op_.inputs.end(),
                                    [](const InputDecl& d) { return d.variadic; });
    if (!has_variadic && n > decl_count) {
      *why = fmt::format("{} inputs, the description declares {}", n, decl_count);
      return false;
    }
    auto assignment = assign_inputs();
    for (size_t d = 0; d < decl_count; ++d) {
      const InputDecl& decl = op_.inputs[d];
      if (assignment[d].empty()) {
        if (!decl.optional && !decl.variadic) {
          *why = fmt::format("input '{}' is missing", decl.name);
          return false;
        }
        continue;
      }
      for (int node_index : assignment[d]) {
        int rank = static_cast<int>(inputs[static_cast<size_t>(node_index)].shape.size());
        int fixed = 0, groups = 0;
        for (const auto& dim : decl.dims) (dim.kind == DimDecl::Kind::kGroup ? groups : fixed) += 1;
        if (groups == 0 ? rank != fixed : rank < fixed) {
          *why = fmt::format("input '{}' has rank {}, the description wants {}{}", decl.name, rank,
                             groups ? "at least " : "", fixed);
          return false;
        }
      }
    }
    return true;
  }

  // Node input indices per declaration: one each, several for a variadic one, none when absent.
  std::vector<std::vector<int>> assign_inputs() const {
    std::vector<std::vector<int>> result(op_.inputs.size());
    int n = static_cast<int>(request_->inputs.size());
    int decl_count = static_cast<int>(op_.inputs.size());
    int v = -1;
    for (int d = 0; d < decl_count; ++d)
      if (op_.inputs[static_cast<size_t>(d)].variadic) v = d;
    for (int d = 0; d < decl_count; ++d) {
      std::vector<int> nodes;
      if (v < 0 || d < v) {
        nodes = {d};
      } else if (d == v) {
        int after = decl_count - 1 - v;
        for (int i = v; i < n - after; ++i) nodes.push_back(i);
      } else {
        int after = decl_count - 1 - d;
        nodes = {n - 1 - after};
      }
      for (int i : nodes)
        if (i >= 0 && i < n && request_->inputs[static_cast<size_t>(i)].present)
          result[static_cast<size_t>(d)].push_back(i);
    }
    return result;
  }

  Expected<Value> eval(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::kInt:
        return Value(e.int_value);
      case ExprKind::kFloat:
        return Value(e.float_value);
      case ExprKind::kString:
        return Value(e.name);
      case ExprKind::kName: {
        auto it = attrs_.find(e.name);
        if (it != attrs_.end()) return Value(it->second);
        auto s = sizes_.find(e.name);
        if (s != sizes_.end()) return Value(s->second);
        return fail(fmt::format("'{}' has no value here", e.name));
      }
      case ExprKind::kAccess: {
        auto it = attrs_.find(e.name);
        if (it == attrs_.end() || e.args.size() != 1)
          return fail(fmt::format("cannot evaluate '{}'", to_string(e)));
        PLANNER_TRY_ASSIGN(Value index, eval(*e.args[0]));
        auto* i = std::get_if<int64_t>(&index);
        if (!i) return fail(fmt::format("'{}': index is not an integer", to_string(e)));
        return std::visit(
            [&](const auto& list) -> Expected<Value> {
              using T = std::decay_t<decltype(list)>;
              if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                            std::is_same_v<T, std::vector<double>> ||
                            std::is_same_v<T, std::vector<std::string>>) {
                int64_t k = *i < 0 ? *i + static_cast<int64_t>(list.size()) : *i;
                if (k < 0 || k >= static_cast<int64_t>(list.size()))
                  return fail(fmt::format("'{}': attribute '{}' has {} elements", to_string(e),
                                          e.name, list.size()));
                return Value(list[static_cast<size_t>(k)]);
              } else {
                return fail(
                    fmt::format("'{}': attribute '{}' is not a list", to_string(e), e.name));
              }
            },
            it->second);
      }
      case ExprKind::kCall: {
        if (e.name == "len") {
          const AttrValue& v = attrs_.at(e.args[0]->name);
          return std::visit(
              [](const auto& x) -> Value {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                              std::is_same_v<T, std::string>)
                  return int64_t{1};
                else
                  return static_cast<int64_t>(x.size());
              },
              v);
        }
        if (e.name == "rank") {
          const std::string& name = e.args[0]->name;
          auto it = ranks_.find(name);
          return Value(int64_t{it == ranks_.end() ? -1 : it->second});
        }
        if (e.name == "max2" || e.name == "min2") {
          PLANNER_TRY_ASSIGN(Value a, eval(*e.args[0]));
          PLANNER_TRY_ASSIGN(Value b, eval(*e.args[1]));
          auto* x = std::get_if<int64_t>(&a);
          auto* y = std::get_if<int64_t>(&b);
          if (!x || !y) return fail(fmt::format("cannot evaluate '{}'", to_string(e)));
          return Value(e.name == "max2" ? std::max(*x, *y) : std::min(*x, *y));
        }
        return fail(fmt::format("cannot evaluate '{}'", to_string(e)));
      }
      case ExprKind::kUnary: {
        PLANNER_TRY_ASSIGN(Value a, eval(*e.args[0]));
        if (e.name == "not") return Value(int64_t{truthy(a) ? 0 : 1});
        if (auto* i = std::get_if<int64_t>(&a)) return Value(-*i);
        if (auto* d = std::get_if<double>(&a)) return Value(-*d);
        return fail(fmt::format("cannot negate '{}'", to_string(*e.args[0])));
      }
      case ExprKind::kBinary: {
        const std::string& op = e.name;
        if (op == "and" || op == "or") {
          PLANNER_TRY_ASSIGN(Value a, eval(*e.args[0]));
          bool left = truthy(a);
          if (op == "and" && !left) return Value(int64_t{0});
          if (op == "or" && left) return Value(int64_t{1});
          PLANNER_TRY_ASSIGN(Value b, eval(*e.args[1]));
          return Value(int64_t{truthy(b) ? 1 : 0});
        }
        PLANNER_TRY_ASSIGN(Value a, eval(*e.args[0]));
        PLANNER_TRY_ASSIGN(Value b, eval(*e.args[1]));
        if (op == "==" || op == "!=") {
          bool eq = equal(a, b);
          return Value(int64_t{(op == "==") == eq ? 1 : 0});
        }
        auto* x = std::get_if<int64_t>(&a);
        auto* y = std::get_if<int64_t>(&b);
        if (x && y) {
          int64_t p = *x, q = *y;
          if (op == "+") return Value(p + q);
          if (op == "-") return Value(p - q);
          if (op == "*") return Value(p * q);
          if ((op == "/" || op == "%") && q == 0)
            return fail(fmt::format("division by zero in '{}'", to_string(e)));
          if (op == "/") return Value(p / q - ((p % q != 0) && ((p < 0) != (q < 0)) ? 1 : 0));
          if (op == "%") return Value(((p % q) + q) % q);
          if (op == "<") return Value(int64_t{p < q});
          if (op == "<=") return Value(int64_t{p <= q});
          if (op == ">") return Value(int64_t{p > q});
          if (op == ">=") return Value(int64_t{p >= q});
        }
        auto num = [](const Value& v, double* out) {
          if (auto* i = std::get_if<int64_t>(&v)) return *out = static_cast<double>(*i), true;
          if (auto* d = std::get_if<double>(&v)) return *out = *d, true;
          return false;
        };
        double p, q;
        if (num(a, &p) && num(b, &q)) {
          if (op == "+") return Value(p + q);
          if (op == "-") return Value(p - q);
          if (op == "*") return Value(p * q);
          if (op == "/") return Value(p / q);
          if (op == "<") return Value(int64_t{p < q});
          if (op == "<=") return Value(int64_t{p <= q});
          if (op == ">") return Value(int64_t{p > q});
          if (op == ">=") return Value(int64_t{p >= q});
        }
        return fail(fmt::format("cannot evaluate '{}'", to_string(e)));
      }
      default:
        return fail(fmt::format("cannot evaluate '{}'", to_string(e)));
    }
  }

  static bool truthy(const Value& v) {
    if (auto* i = std::get_if<int64_t>(&v)) return *i != 0;
    if (auto* d = std::get_if<double>(&v)) return *d != 0;
    return true;
  }
  static bool equal(const Value& a, const Value& b) {
    auto* x = std::get_if<int64_t>(&a);
    auto* y = std::get_if<int64_t>(&b);
    auto* dx = std::get_if<double>(&a);
    auto* dy = std::get_if<double>(&b);
    if ((x || dx) && (y || dy)) {
      double p = x ? static_cast<double>(*x) : *dx, q = y ? static_cast<double>(*y) : *dy;
      return p == q;
    }
    return a == b;
  }

  Expected<bool> guard_holds() {
    if (!op_.guard) return true;
    PLANNER_TRY_ASSIGN(Value v, eval(*op_.guard));
    return truthy(v);
  }

  void set_ranks() {
    ranks_.clear();
    if (!request_) {
      for (const auto& decl : op_.inputs) {
        int fixed = 0;
        for (const auto& d : decl.dims) fixed += d.kind == DimDecl::Kind::kGroup ? 0 : 1;
        ranks_[decl.name] = fixed;
      }
      return;
    }
    auto assignment = assign_inputs();
    for (size_t d = 0; d < op_.inputs.size(); ++d) {
      if (assignment[d].empty()) continue;
      ranks_[op_.inputs[d].name] =
          static_cast<int>(request_->inputs[static_cast<size_t>(assignment[d][0])].shape.size());
    }
  }

  // Steps 2-4: instance inputs, their dimension layout and sizes.
  Expected<void> build_inputs() {
    std::vector<std::vector<int>> assignment;
    if (request_) {
      assignment = assign_inputs();
    } else {
      for (size_t d = 0; d < op_.inputs.size(); ++d) {
        if (op_.inputs[d].variadic) return fail("a variadic input needs a node to instantiate for");
        assignment.push_back({static_cast<int>(d)});
      }
    }
    decl_instances_.assign(op_.inputs.size(), {});
    // Group lengths the inputs that can be laid out alone fix, for those that cannot.
    std::map<std::string, int> known;
    for (size_t d = 0; d < op_.inputs.size() && request_; ++d) {
      const InputDecl& decl = op_.inputs[d];
      for (int node_index : assignment[d]) {
        const int rank =
            static_cast<int>(request_->inputs[static_cast<size_t>(node_index)].shape.size());
        auto spans = layout(decl, rank);
        if (!spans) continue;
        for (size_t i = 0; i < decl.dims.size(); ++i)
          if (decl.dims[i].kind == DimDecl::Kind::kGroup)
            known.emplace(decl.dims[i].name, (*spans)[i]);
      }
    }
    for (size_t d = 0; d < op_.inputs.size(); ++d) {
      const InputDecl& decl = op_.inputs[d];
      for (size_t k = 0; k < assignment[d].size(); ++k) {
        int node_index = assignment[d][k];
        InstanceTensor t;
        t.name = decl.variadic ? fmt::format("{}_{}", decl.name, k) : decl.name;
        t.node_index = node_index;
        std::string suffix = decl.variadic ? fmt::format("_{}", k) : "";
        const std::vector<int64_t>* shape =
            request_ ? &request_->inputs[static_cast<size_t>(node_index)].shape : nullptr;
        int rank = shape ? static_cast<int>(shape->size()) : -1;
        PLANNER_TRY_ASSIGN(std::vector<int> spans, layout(decl, rank, &known));
        Layout lay;
        lay.spans = spans;
        int pos = 0;
        for (size_t i = 0; i < decl.dims.size(); ++i) {
          const DimDecl& dim = decl.dims[i];
          if (dim.kind == DimDecl::Kind::kGroup) {
            for (int j = 0; j < spans[i]; ++j, ++pos) {
              std::string sym = fmt::format("{}.{}", t.name, pos);
              PLANNER_TRY(bind_size(sym, shape ? (*shape)[static_cast<size_t>(pos)] : -1, t.name));
              t.dims.push_back(make_name(sym));
            }
            group_len_[dim.name] = std::max(group_len_[dim.name], spans[i]);
            continue;
          }
          int64_t actual = shape ? (*shape)[static_cast<size_t>(pos)] : -1;
          if (dim.kind == DimDecl::Kind::kSize) {
            PLANNER_TRY(bind_size(dim.name + suffix, actual, t.name));
            t.dims.push_back(make_name(dim.name + suffix));
          } else if (dim.kind == DimDecl::Kind::kInt) {
            if (shape && actual != dim.value)
              return fail(
                  fmt::format("input '{}' has size {} in dimension {}, the description wants {}",
                              t.name, actual, pos, dim.value));
            t.dims.push_back(make_int(dim.value));
          } else {
            ExprPtr e = rename_sizes(dim.expr, suffix);
            std::set<std::string> names;
            collect_names(*e, names);
            for (const auto& n : names)
              if (std::find(inst_.symbols.begin(), inst_.symbols.end(), n) == inst_.symbols.end())
                inst_.symbols.push_back(n);
            t.dims.push_back(e);
            if (shape) pending_.push_back({e, actual, t.name});
          }
          ++pos;
        }
        if (decl.has_view) {
          t.has_view = true;
          for (const auto& v : decl.view) t.view.push_back(rename_sizes(v.expr, suffix));
        }
        decl_instances_[d].push_back({static_cast<int>(inst_.inputs.size()), lay});
        inst_.inputs.push_back(std::move(t));
      }
    }
    // Dimensions written as expressions of sizes (`4 * H`) bind their one unknown size.
    for (const auto& p : pending_) PLANNER_TRY(solve(p));
    return ok();
  }

  struct Layout {
    std::vector<int> spans;  // per DimDecl: how many actual dimensions it covers
  };
  struct Pending {
    ExprPtr expr;
    int64_t actual;
    std::string input;
  };

  // How many dimensions each declared dimension covers for an input of `rank` (-1: no node,
  // groups are empty). Several groups with no `@ axis` between them divide the free dimensions
  // by the lengths `known` from other inputs (`dY[..a, ..b]` beside `X[..a, R @ axis, ..b]`).
  Expected<std::vector<int>> layout(const InputDecl& decl, int rank,
                                    const std::map<std::string, int>* known = nullptr) const {
    std::vector<int> spans(decl.dims.size(), 1);
    int fixed = 0;
    std::vector<size_t> groups;
    for (size_t i = 0; i < decl.dims.size(); ++i) {
      if (decl.dims[i].kind == DimDecl::Kind::kGroup) {
        groups.push_back(i);
        spans[i] = 0;
      } else {
        ++fixed;
      }
    }
    if (rank < 0 || groups.empty()) return spans;
    int free = rank - fixed;
    if (groups.size() == 1) {
      spans[groups[0]] = free;
      return spans;
    }
    // Several groups: an `@ axis` dimension between them fixes how the rest divides.
    for (size_t i = 0; i < decl.dims.size(); ++i) {
      const DimDecl& dim = decl.dims[i];
      if (dim.kind != DimDecl::Kind::kSize || dim.axis_attr.empty()) continue;
      PLANNER_TRY_ASSIGN(int64_t axis, axis_value(dim.axis_attr, rank));
      int fixed_before = 0, fixed_after = 0;
      std::vector<size_t> before, after;
      for (size_t j = 0; j < decl.dims.size(); ++j) {
        bool group = decl.dims[j].kind == DimDecl::Kind::kGroup;
        if (j < i) (group ? (before.push_back(j), fixed_before) : ++fixed_before, 0);
        if (j > i) (group ? (after.push_back(j), fixed_after) : ++fixed_after, 0);
      }
      if (before.size() > 1 || after.size() > 1)
        return fail(fmt::format("input '{}': at most one group on each side of '@ {}'", decl.name,
                                dim.axis_attr));
      int len_before = static_cast<int>(axis) - fixed_before;
      int len_after = rank - static_cast<int>(axis) - 1 - fixed_after;
      if (len_before < 0 || len_after < 0 || (before.empty() && len_before) ||
          (after.empty() && len_after))
        return fail(
            fmt::format("input '{}': axis {} does not fit its rank {}", decl.name, axis, rank));
      if (!before.empty()) spans[before[0]] = len_before;
      if (!after.empty()) spans[after[0]] = len_after;
      return spans;
    }
    if (known) {
      std::optional<size_t> unknown;
      int placed = 0;
      bool fits = true;
      for (size_t g : groups) {
        auto it = known->find(decl.dims[g].name);
        if (it != known->end()) {
          spans[g] = it->second;
          placed += it->second;
        } else if (!unknown) {
          unknown = g;
        } else {
          fits = false;
        }
      }
      if (fits && placed <= free && (unknown || placed == free)) {
        if (unknown) spans[*unknown] = free - placed;
        return spans;
      }
    }
    return fail(
        fmt::format("input '{}' has several groups and no '@' dimension to place them", decl.name));
  }

  Expected<int64_t> axis_value(const std::string& attr, int rank) const {
    auto it = attrs_.find(attr);
    if (it == attrs_.end()) return fail(fmt::format("unknown attribute '{}'", attr));
    auto ints = as_ints(it->second);
    if (!ints || ints->size() != 1)
      return fail(fmt::format("attribute '{}' = {} does not name one axis", attr,
                              attr_to_string(it->second)));
    int64_t axis = (*ints)[0];
    if (axis < -rank || axis >= rank)
      return fail(fmt::format("attribute '{}' = {} is out of range for rank {}", attr, axis, rank));
    return axis < 0 ? axis + rank : axis;
  }

  Expected<void> bind_size(const std::string& sym, int64_t value, const std::string& input) {
    if (std::find(inst_.symbols.begin(), inst_.symbols.end(), sym) == inst_.symbols.end())
      inst_.symbols.push_back(sym);
    if (value < 0) {
      auto given = standalone_sizes_.find(sym);
      if (given != standalone_sizes_.end()) sizes_[sym] = given->second;
      return ok();
    }
    auto [it, inserted] = sizes_.emplace(sym, value);
    if (!inserted && it->second != value)
      return fail(fmt::format("size '{}' is {} in input '{}' but {} elsewhere", sym, value, input,
                              it->second));
    return ok();
  }

  ExprPtr rename_sizes(const ExprPtr& e, const std::string& suffix) const {
    if (!e) return e;
    if (suffix.empty()) return e;
    if (e->kind == ExprKind::kName && is_size_name(e->name))
      return make_name(e->name + suffix, e->loc);
    if (e->args.empty()) return e;
    auto copy = std::make_shared<Expr>(*e);
    for (auto& a : copy->args) a = rename_sizes(a, suffix);
    update_height(*copy);
    return copy;
  }

  void collect_names(const Expr& e, std::set<std::string>& out) const {
    if (e.kind == ExprKind::kName && !attrs_.count(e.name)) out.insert(e.name);
    for (const auto& a : e.args) collect_names(*a, out);
  }

  // Binds the one unknown size of `p.expr` so that it evaluates to p.actual (affine in it).
  Expected<void> solve(const Pending& p) {
    std::set<std::string> names;
    collect_names(*p.expr, names);
    std::vector<std::string> unknown;
    for (const auto& n : names)
      if (!sizes_.count(n)) unknown.push_back(n);
    if (unknown.size() > 1)
      return fail(fmt::format("input '{}': cannot infer both '{}' and '{}' from '{}'", p.input,
                              unknown[0], unknown[1], to_string(p.expr)));
    if (unknown.size() == 1) {
      sizes_[unknown[0]] = 0;
      auto at0 = eval(*p.expr);
      sizes_[unknown[0]] = 1;
      auto at1 = eval(*p.expr);
      sizes_.erase(unknown[0]);
      if (!at0 || !at1 || !std::holds_alternative<int64_t>(*at0) ||
          !std::holds_alternative<int64_t>(*at1))
        return fail(fmt::format("input '{}': cannot evaluate '{}'", p.input, to_string(p.expr)));
      int64_t b = std::get<int64_t>(*at0), a = std::get<int64_t>(*at1) - b;
      if (a == 0 || (p.actual - b) % a != 0 || (p.actual - b) / a < 0)
        return fail(fmt::format("input '{}': size {} does not fit '{}'", p.input, p.actual,
                                to_string(p.expr)));
      sizes_[unknown[0]] = (p.actual - b) / a;
      if (std::find(inst_.symbols.begin(), inst_.symbols.end(), unknown[0]) == inst_.symbols.end())
        inst_.symbols.push_back(unknown[0]);
    }
    PLANNER_TRY_ASSIGN(Value v, eval(*p.expr));
    if (!std::holds_alternative<int64_t>(v) || std::get<int64_t>(v) != p.actual)
      return fail(fmt::format("input '{}': size {} does not match '{}'", p.input, p.actual,
                              to_string(p.expr)));
    return ok();
  }

  std::string group_var(const std::string& group, int k) const {
    std::string base = group.empty() ? "e" : group;
    std::string name = fmt::format("{}{}", base, k);
    while (declared_vars_.count(name)) name += "_";
    return name;
  }

  // Step 6: outputs and their index variables.
  Expected<void> build_outputs() {
    for (const auto& out : op_.outputs)
      for (const auto& d : out.dims)
        if (!d.is_group) declared_vars_.insert(d.name);
    int node_index = 0;
    for (const auto& out : op_.outputs) {
      int copies = 1;
      if (out.variadic) {
        if (!request_) return fail("a variadic output needs a node to instantiate for");
        copies = static_cast<int>(request_->outputs.size()) - node_index;
        if (copies < 1) return fail(fmt::format("output '{}' matches no node output", out.name));
      }
      for (int c = 0; c < copies; ++c, ++node_index) {
        InstanceOutputTensor t;
        t.name = out.variadic ? fmt::format("{}_{}", out.name, c) : out.name;
        t.node_index = node_index;
        const InstanceOutput* node_out = nullptr;
        if (request_ && node_index < static_cast<int>(request_->outputs.size()))
          node_out = &request_->outputs[static_cast<size_t>(node_index)];
        t.present = request_ ? node_out && node_out->present : true;
        if (node_out && node_out->present) t.shape = node_out->shape;
        // A group only the output has takes what the node's output rank leaves.
        int fixed = 0;
        std::vector<std::string> unknown_groups;
        for (const auto& d : out.dims) {
          if (!d.is_group)
            ++fixed;
          else if (!group_len_.count(d.name))
            unknown_groups.push_back(d.name);
        }
        if (!unknown_groups.empty()) {
          if (unknown_groups.size() > 1)
            return fail(fmt::format("output '{}': cannot size two new groups", out.name));
          int known = 0;
          for (const auto& d : out.dims)
            if (d.is_group && group_len_.count(d.name)) known += group_len_[d.name];
          int len = t.shape ? static_cast<int>(t.shape->size()) - fixed - known : 0;
          if (len < 0)
            return fail(fmt::format("output '{}' has rank {}, too small for the description",
                                    t.name, t.shape->size()));
          group_len_[unknown_groups[0]] = len;
        }
        for (const auto& d : out.dims) {
          if (d.is_group) {
            for (int k = 0; k < group_len_[d.name]; ++k) {
              t.vars.push_back(group_var(d.name, k));
              t.extents.push_back(nullptr);
            }
          } else {
            t.vars.push_back(d.name);
            ExprPtr extent;
            if (d.extent) {
              PLANNER_TRY_ASSIGN(extent, transform(d.extent, /*output=*/-1));
            }
            t.extents.push_back(extent);
          }
        }
        if (t.shape && t.shape->size() != t.vars.size())
          return fail(fmt::format("output '{}' has rank {}, the description gives it {}", t.name,
                                  t.shape->size(), t.vars.size()));
        out_decl_of_.push_back(&out);
        inst_.outputs.push_back(std::move(t));
      }
    }
    for (const auto& o : inst_.outputs)
      for (const auto& v : o.vars) used_vars_.insert(v);
    return ok();
  }

  // Step 7: bodies.
  Expected<void> build_bodies() {
    for (size_t o = 0; o < inst_.outputs.size(); ++o) {
      const OutputDecl* decl = out_decl_of_[o];
      size_t decl_index = static_cast<size_t>(decl - op_.outputs.data());
      PLANNER_TRY_ASSIGN(ExprPtr body, transform(op_.bodies[decl_index], static_cast<int>(o)));
      if (is_absent(body)) body = make_int(0);
      inst_.bodies.push_back(body);
    }
    return ok();
  }

  const std::vector<std::string>& group_vars_of_output(int output, const std::string& group) {
    auto key = std::make_pair(output, group);
    auto it = group_vars_cache_.find(key);
    if (it != group_vars_cache_.end()) return it->second;
    std::vector<std::string> vars;
    for (int k = 0; k < group_len_[group]; ++k) vars.push_back(group_var(group, k));
    return group_vars_cache_[key] = vars;
  }

  Expected<ExprPtr> transform(const ExprPtr& e, int output) {
    switch (e->kind) {
      case ExprKind::kInt:
      case ExprKind::kFloat:
      case ExprKind::kString:
        return e;
      case ExprKind::kName: {
        auto r = renames_.find(e->name);
        if (r != renames_.end()) return make_name(r->second, e->loc);
        auto it = attrs_.find(e->name);
        if (it != attrs_.end()) return attr_literal(it->second, e->loc);
        return e;
      }
      case ExprKind::kWhole:
      case ExprKind::kGroup:
        return fail(fmt::format("unexpected '{}'", to_string(*e)));
      case ExprKind::kList: {
        auto copy = std::make_shared<Expr>(*e);
        for (auto& a : copy->args) {
          PLANNER_TRY_ASSIGN(a, transform(a, output));
        }
        update_height(*copy);
        return ExprPtr(copy);
      }
      case ExprKind::kAccess:
        return transform_access(e, output);
      case ExprKind::kCall:
        return transform_call(e, output);
      case ExprKind::kReduce: {
        auto copy = std::make_shared<Expr>(*e);
        std::map<std::string, std::string> saved = renames_;
        for (size_t i = 0; i < copy->vars.size(); ++i) {
          std::string name = copy->vars[i];
          std::string unique = name;
          for (int n = 2;
               used_vars_.count(unique) || (declared_vars_.count(unique) && unique != name); ++n)
            unique = fmt::format("{}_{}", name, n);
          used_vars_.insert(unique);
          renames_[name] = unique;
          copy->vars[i] = unique;
          if (i < copy->var_extents.size() && copy->var_extents[i]) {
            PLANNER_TRY_ASSIGN(copy->var_extents[i], transform(copy->var_extents[i], output));
          }
        }
        auto body = transform(copy->args[0], output);
        renames_ = saved;
        if (!body) return body.error();
        if (is_absent(*body)) return *body;
        copy->args[0] = *body;
        return ExprPtr(copy);
      }
      case ExprKind::kUnary: {
        PLANNER_TRY_ASSIGN(ExprPtr a, transform(e->args[0], output));
        if (is_absent(a)) return a;
        if (e->name == "-" && a->kind == ExprKind::kInt) return make_int(-a->int_value, e->loc);
        return make_unary(e->name, a, e->loc);
      }
      case ExprKind::kBinary: {
        PLANNER_TRY_ASSIGN(ExprPtr a, transform(e->args[0], output));
        PLANNER_TRY_ASSIGN(ExprPtr b, transform(e->args[1], output));
        const std::string& op = e->name;
        // An absent optional input drops out: a sum term becomes 0, a product factor 1.
        if (is_absent(a) && is_absent(b)) return a;
        if (is_absent(b) && (op == "+" || op == "-" || op == "*" || op == "/")) return a;
        if (is_absent(a) && (op == "+" || op == "*")) return b;
        if (is_absent(a) && op == "-") return make_unary("-", b, e->loc);
        if (is_absent(a) || is_absent(b)) return make_name(kAbsent);
        return fold_binary(op, a, b, e->loc);
      }
    }
    return e;
  }

  Expected<ExprPtr> transform_access(const ExprPtr& e, int output) {
    auto attr = attrs_.find(e->name);
    if (attr != attrs_.end()) {
      PLANNER_TRY_ASSIGN(Value v, eval(*e));
      return std::visit([&](const auto& x) { return attr_literal(AttrValue(x), e->loc); }, v);
    }
    int out_index = inst_.find_output(e->name);
    if (out_index < 0 && op_.find_output(e->name)) out_index = -2;
    if (out_index != -1) {
      // A read of one of the operator's own outputs (a recurrence or a sibling output).
      if (out_index < 0)
        return fail(fmt::format("output '{}' is variadic and cannot be read", e->name));
      std::vector<ExprPtr> indices;
      for (const auto& index : e->args) {
        if (index->kind == ExprKind::kGroup) {
          for (const auto& v : group_vars_of_output(output, index->name))
            indices.push_back(make_name(v));
        } else if (index->kind == ExprKind::kWhole) {
          indices.push_back(index);
        } else {
          PLANNER_TRY_ASSIGN(ExprPtr i, transform(index, output));
          indices.push_back(i);
        }
      }
      return make_access(e->name, std::move(indices), e->loc);
    }
    size_t d = 0;
    for (; d < op_.inputs.size(); ++d)
      if (op_.inputs[d].name == e->name) break;
    if (d == op_.inputs.size()) return fail(fmt::format("unknown tensor '{}'", e->name));
    const InputDecl& decl = op_.inputs[d];
    if (decl_instances_[d].empty()) return make_name(kAbsent);
    if (decl.variadic)
      return fail(
          fmt::format("variadic input '{}' can only be used through concat(...)", decl.name));
    const auto& [inst_index, lay] = decl_instances_[d][0];
    const InstanceTensor& t = inst_.inputs[static_cast<size_t>(inst_index)];
    bool concrete = request_ != nullptr;
    auto size_is_one = [&](size_t dim) {
      const ExprPtr& size = t.dims[dim];
      if (size->kind == ExprKind::kInt) return size->int_value == 1;
      auto it = sizes_.find(size->name);
      return concrete && size->kind == ExprKind::kName && it != sizes_.end() && it->second == 1;
    };
    std::vector<ExprPtr> indices;
    bool bare_group =
        decl.dims.size() == 1 && decl.dims[0].kind == DimDecl::Kind::kGroup && !decl.has_view;
    bool access_has_group = std::any_of(e->args.begin(), e->args.end(), [](const ExprPtr& i) {
      return i->kind == ExprKind::kGroup;
    });
    if (bare_group && !access_has_group) {
      // Right-aligned read of a lower-rank input: its dimensions meet the last indices.
      size_t rank = t.dims.size();
      if (rank > e->args.size())
        return fail(fmt::format("input '{}' has rank {} but is read with {} indices", t.name, rank,
                                e->args.size()));
      for (size_t k = e->args.size() - rank, dim = 0; k < e->args.size(); ++k, ++dim) {
        if (size_is_one(dim)) {
          indices.push_back(make_int(0));
        } else {
          PLANNER_TRY_ASSIGN(ExprPtr i, transform_index(e->args[k], output));
          indices.push_back(i);
        }
      }
      return make_access(t.name, std::move(indices), e->loc);
    }
    const std::vector<DimDecl>& dims = decl.has_view ? decl.view : decl.dims;
    if (e->args.size() != dims.size())
      return fail(fmt::format("'{}' is read with {} indices for {} declared dimensions", decl.name,
                              e->args.size(), dims.size()));
    size_t dim = 0;
    for (size_t k = 0; k < e->args.size(); ++k) {
      const ExprPtr& index = e->args[k];
      if ((index->kind == ExprKind::kGroup) != (dims[k].kind == DimDecl::Kind::kGroup))
        return fail(fmt::format("'{}': index {} is {} but the declaration has {} there",
                                to_string(*e), k + 1,
                                index->kind == ExprKind::kGroup ? "a group" : "not a group",
                                dims[k].kind == DimDecl::Kind::kGroup ? "a group" : "a dimension"));
      if (index->kind == ExprKind::kGroup) {
        int len = decl.has_view ? 0 : lay.spans[k];
        const auto& vars = group_vars_of_output(output, index->name);
        if (static_cast<int>(vars.size()) < len)
          return fail(
              fmt::format("group '{}' of input '{}' has {} dimensions, more than the output's {}",
                          group_label(index->name), t.name, len, vars.size()));
        // Numpy broadcasting: right-aligned, size-1 dimensions read at 0.
        for (int j = 0; j < len; ++j, ++dim) {
          if (size_is_one(dim))
            indices.push_back(make_int(0));
          else
            indices.push_back(
                make_name(vars[vars.size() - static_cast<size_t>(len) + static_cast<size_t>(j)]));
        }
        continue;
      }
      PLANNER_TRY_ASSIGN(ExprPtr i, transform_index(index, output));
      indices.push_back(i);
      ++dim;
    }
    return make_access(t.name, std::move(indices), e->loc);
  }

  Expected<ExprPtr> transform_index(const ExprPtr& index, int output) {
    if (index->kind == ExprKind::kWhole) return index;
    return transform(index, output);
  }

  Expected<ExprPtr> transform_call(const ExprPtr& e, int output) {
    if (e->name == "len" || e->name == "rank") {
      PLANNER_TRY_ASSIGN(Value v, eval(*e));
      return make_int(std::get<int64_t>(v), e->loc);
    }
    if (is_remap_function(e->name)) return expand_remap(e, output);
    auto copy = std::make_shared<Expr>(*e);
    copy->args.clear();
    for (const auto& arg : e->args) {
      PLANNER_TRY_ASSIGN(ExprPtr a, transform(arg, output));
      // An opaque function just reads less when an optional input is absent; any other
      // function of an absent value is absent itself.
      if (is_absent(a) && e->name != "opaque") return a;
      if (!is_absent(a)) copy->args.push_back(a);
    }
    if (copy->args.empty()) return make_name(kAbsent);
    return ExprPtr(copy);
  }

  // --- Remaps: shape-driven index maps expanded into affine accesses. ---

  struct RemapInput {
    const InstanceTensor* tensor;
    std::vector<int64_t> shape;
  };

  Expected<std::vector<RemapInput>> remap_inputs(const ExprPtr& e) {
    if (!request_)
      return fail(fmt::format("'{}' needs a node (concrete shapes) to instantiate", e->name));
    const std::string& name = e->args[0]->name;
    size_t d = 0;
    while (d < op_.inputs.size() && op_.inputs[d].name != name) ++d;
    std::vector<RemapInput> result;
    for (const auto& [inst_index, lay] : decl_instances_[d]) {
      const InstanceTensor& t = inst_.inputs[static_cast<size_t>(inst_index)];
      result.push_back({&t, request_->inputs[static_cast<size_t>(t.node_index)].shape});
    }
    if (result.empty())
      return fail(fmt::format("'{}' reads input '{}', which the node omits", e->name, name));
    return result;
  }

  Expected<std::vector<int64_t>> out_shape(int output) const {
    const auto& t = inst_.outputs[static_cast<size_t>(output)];
    if (!t.shape) return fail(fmt::format("output '{}' has no shape", t.name));
    return *t.shape;
  }

  std::vector<ExprPtr> out_vars(int output) const {
    std::vector<ExprPtr> v;
    for (const auto& name : inst_.outputs[static_cast<size_t>(output)].vars)
      v.push_back(make_name(name));
    return v;
  }

  // A constant integer list: from the node input named `name` (its values) or the attribute.
  std::optional<std::vector<int64_t>> constant_list(const std::string& name) const {
    for (size_t d = 0; d < op_.inputs.size(); ++d) {
      if (op_.inputs[d].name != name || decl_instances_[d].empty()) continue;
      const auto& t = inst_.inputs[static_cast<size_t>(decl_instances_[d][0].first)];
      const auto& values = request_->inputs[static_cast<size_t>(t.node_index)].values;
      if (values) return *values;
    }
    auto it = attrs_.find(name);
    if (it != attrs_.end()) return as_ints(it->second);
    auto given = request_->attributes.find(name);
    if (given != request_->attributes.end()) return as_ints(given->second);
    return std::nullopt;
  }

  Expected<ExprPtr> expand_remap(const ExprPtr& e, int output) {
    PLANNER_TRY_ASSIGN(std::vector<RemapInput> ins, remap_inputs(e));
    PLANNER_TRY_ASSIGN(std::vector<int64_t> oshape, out_shape(output));
    std::vector<ExprPtr> v = out_vars(output);
    const std::string& fn = e->name;
    auto int_arg = [&](size_t i, const std::string& what) -> Expected<int64_t> {
      if (e->args.size() <= i) return fail(fmt::format("'{}' needs {}", fn, what));
      PLANNER_TRY_ASSIGN(Value val, eval(*e->args[i]));
      if (auto* x = std::get_if<int64_t>(&val)) return *x;
      if (auto* l = std::get_if<std::vector<int64_t>>(&val); l && l->size() == 1) return (*l)[0];
      return fail(fmt::format("'{}': {} is not an integer", fn, what));
    };
    auto normalize = [&](int64_t axis, size_t rank) -> Expected<size_t> {
      int64_t r = static_cast<int64_t>(rank);
      if (axis < -r || axis >= r)
        return fail(fmt::format("'{}': axis {} is out of range for rank {}", fn, axis, rank));
      return static_cast<size_t>(axis < 0 ? axis + r : axis);
    };
    const InstanceTensor& x = *ins[0].tensor;
    const std::vector<int64_t>& ishape = ins[0].shape;
    if (fn == "reshape") return expand_reshape(x, ishape, oshape, v);
    for (const auto& in : ins)
      if (in.shape.size() != oshape.size() || v.size() != oshape.size())
        return fail(fmt::format("'{}': input '{}' has rank {} but the output has rank {}", fn,
                                in.tensor->name, in.shape.size(), oshape.size()));
    if (fn == "transpose") {
      std::vector<int64_t> perm;
      if (auto p = constant_list("perm")) perm = *p;
      if (perm.empty())
        for (size_t i = 0; i < ishape.size(); ++i)
          perm.push_back(static_cast<int64_t>(ishape.size() - 1 - i));
      if (perm.size() != ishape.size() || v.size() != ishape.size())
        return fail(
            fmt::format("transpose: perm has {} entries for rank {}", perm.size(), ishape.size()));
      std::vector<ExprPtr> idx(ishape.size());
      for (size_t j = 0; j < perm.size(); ++j) {
        PLANNER_TRY_ASSIGN(size_t a, normalize(perm[j], ishape.size()));
        idx[a] = v[j];
      }
      for (const auto& i : idx)
        if (!i) return fail("transpose: perm is not a permutation");
      return make_access(x.name, idx, e->loc);
    }
    if (fn == "concat") {
      PLANNER_TRY_ASSIGN(int64_t raw_axis, int_arg(1, "an axis"));
      PLANNER_TRY_ASSIGN(size_t axis, normalize(raw_axis, oshape.size()));
      std::vector<ExprPtr> parts;
      int64_t offset = 0;
      for (const auto& in : ins) {
        if (in.shape.size() != oshape.size())
          return fail("concat: inputs and output differ in rank");
        std::vector<ExprPtr> idx = v;
        idx[axis] = fold_binary("-", v[axis], make_int(offset), {});
        parts.push_back(make_access(in.tensor->name, idx, e->loc));
        offset += in.shape[axis];
      }
      // Each part is read only where it lies; the analysis clips accesses to the input's bounds.
      return make_call("concat", parts, e->loc);
    }
    if (fn == "split") {
      PLANNER_TRY_ASSIGN(int64_t raw_axis, int_arg(1, "an axis"));
      PLANNER_TRY_ASSIGN(size_t axis, normalize(raw_axis, ishape.size()));
      int64_t offset = 0;
      int first = output;
      const OutputDecl* decl = out_decl_of_[static_cast<size_t>(output)];
      while (first > 0 && out_decl_of_[static_cast<size_t>(first - 1)] == decl) --first;
      for (int o = first; o < output; ++o) {
        PLANNER_TRY_ASSIGN(std::vector<int64_t> s, out_shape(o));
        if (s.size() != ishape.size()) return fail("split: outputs and input differ in rank");
        offset += s[axis];
      }
      std::vector<ExprPtr> idx = v;
      idx[axis] = fold_binary("+", v[axis], make_int(offset), {});
      return make_access(x.name, idx, e->loc);
    }
    if (fn == "slice") {
      auto starts = constant_list("starts");
      auto ends = constant_list("ends");
      if (!starts || !ends) return fail("slice: starts and ends must be constants");
      std::vector<int64_t> axes, steps;
      if (auto a = constant_list("axes")) axes = *a;
      if (auto s = constant_list("steps")) steps = *s;
      if (axes.empty())
        for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
      if (steps.empty()) steps.assign(starts->size(), 1);
      if (axes.size() != starts->size() || steps.size() != starts->size())
        return fail("slice: starts, axes and steps differ in length");
      std::vector<ExprPtr> idx = v;
      for (size_t i = 0; i < axes.size(); ++i) {
        PLANNER_TRY_ASSIGN(size_t a, normalize(axes[i], ishape.size()));
        int64_t dim = ishape[a], step = steps[i], start = (*starts)[i];
        if (step == 0) return fail("slice: a step is 0");
        if (start < 0) start += dim;
        start =
            step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
        ExprPtr scaled = fold_binary("*", v[a], make_int(step), {});
        idx[a] = fold_binary("+", make_int(start), scaled, {});
        if (start != 0) idx[a] = fold_binary("+", scaled, make_int(start), {});
      }
      return make_access(x.name, idx, e->loc);
    }
    if (fn == "pad") {
      auto pads = constant_list("pads");
      if (!pads || pads->size() != 2 * ishape.size())
        return fail("pad: pads must be a constant of twice the rank");
      std::vector<ExprPtr> idx = v;
      for (size_t a = 0; a < ishape.size(); ++a)
        idx[a] = fold_binary("-", v[a], make_int((*pads)[a]), {});
      // Reads outside the input are padding; the analysis clips them to the input's bounds.
      return make_access(x.name, idx, e->loc);
    }
    return fail(fmt::format("unknown remap '{}'", fn));
  }

  Expected<ExprPtr> expand_reshape(const InstanceTensor& x, const std::vector<int64_t>& ishape,
                                   const std::vector<int64_t>& oshape,
                                   const std::vector<ExprPtr>& v) {
    auto product = [](const std::vector<int64_t>& s) {
      return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
    };
    if (product(ishape) != product(oshape))
      return fail(fmt::format("reshape: {} elements into {}", product(ishape), product(oshape)));
    std::vector<ExprPtr> idx(ishape.size());
    // Size-1 dimensions are read at 0 and ignored when grouping.
    std::vector<size_t> in_dims, out_dims;
    for (size_t i = 0; i < ishape.size(); ++i) {
      if (ishape[i] == 1)
        idx[i] = make_int(0);
      else
        in_dims.push_back(i);
    }
    for (size_t j = 0; j < oshape.size(); ++j)
      if (oshape[j] != 1) out_dims.push_back(j);
    // Walk both shapes, closing a group whenever the running products meet.
    size_t a = 0, b = 0;
    while (a < in_dims.size() || b < out_dims.size()) {
      std::vector<size_t> gi, go;
      int64_t pi = 1, po = 1;
      do {
        if (pi <= po && a < in_dims.size()) {
          gi.push_back(in_dims[a]);
          pi *= ishape[in_dims[a++]];
        } else if (b < out_dims.size()) {
          go.push_back(out_dims[b]);
          po *= oshape[out_dims[b++]];
        } else {
          return fail("reshape: shapes do not divide into groups");
        }
      } while (pi != po || gi.empty() || go.empty());
      // The flat position within the group, from the output's indices.
      ExprPtr flat;
      int64_t stride = 1;
      for (size_t k = go.size(); k-- > 0;) {
        ExprPtr term = fold_binary("*", v[go[k]], make_int(stride), {});
        flat = flat ? fold_binary("+", term, flat, {}) : term;
        stride *= oshape[go[k]];
      }
      stride = 1;
      for (size_t k = gi.size(); k-- > 0;) {
        ExprPtr i = fold_binary("/", flat, make_int(stride), {});
        if (k > 0) i = fold_binary("%", i, make_int(ishape[gi[k]]), {});
        idx[gi[k]] = i;
        stride *= ishape[gi[k]];
      }
    }
    return make_access(x.name, idx, {});
  }

  Expected<Instance> finish() {
    inst_.op_type = op_.op_type;
    inst_.domain = op_.domain;
    inst_.node_name = request_ ? request_->node_name : "";
    inst_.variant = fmt::format("{}:{}", source_ ? source_->name : "<tdl>", op_.loc.line);
    inst_.sizes = sizes_;
    return std::move(inst_);
  }

  Expected<Instance> run_standalone(const std::map<std::string, int64_t>& sizes,
                                    const std::map<std::string, AttrValue>& attributes) {
    standalone_sizes_ = sizes;
    PLANNER_TRY(bind_attributes(attributes));
    set_ranks();
    PLANNER_TRY(build_inputs());
    PLANNER_TRY(build_outputs());
    PLANNER_TRY(build_bodies());
    return finish();
  }

  Expected<Instance> run_request() {
    set_ranks();
    PLANNER_TRY(build_inputs());
    PLANNER_TRY(build_outputs());
    PLANNER_TRY(build_bodies());
    return finish();
  }

  Expected<void> bind_request_attributes() { return bind_attributes(request_->attributes); }

 private:
  const OpDef& op_;
  const InstanceRequest* request_;
  const Source* source_;
  std::map<std::string, AttrValue> attrs_;
  std::map<std::string, int> ranks_;
  std::map<std::string, int64_t> sizes_;
  std::map<std::string, int64_t> standalone_sizes_;
  std::map<std::string, int> group_len_;
  std::vector<std::vector<std::pair<int, Layout>>> decl_instances_;
  std::vector<Pending> pending_;
  std::vector<const OutputDecl*> out_decl_of_;
  std::set<std::string> declared_vars_;
  std::set<std::string> used_vars_;
  std::map<std::string, std::string> renames_;
  std::map<std::pair<int, std::string>, std::vector<std::string>> group_vars_cache_;
  Instance inst_;
};

}  // namespace

bool Instance::concrete() const {
  for (const auto& s : symbols)
    if (!sizes.count(s)) return false;
  return true;
}

std::string Instance::label() const {
  if (node_name.empty()) return domain.empty() ? op_type : domain + "." + op_type;
  return fmt::format("node '{}' ({})", node_name, op_type);
}

int Instance::find_input(std::string_view name) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == name) return static_cast<int>(i);
  return -1;
}

int Instance::find_output(std::string_view name) const {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].name == name) return static_cast<int>(i);
  return -1;
}

Expected<Instance> instantiate(const std::vector<const OpDef*>& variants,
                               const InstanceRequest& request, const Source* source) {
  std::vector<std::string> reasons;
  for (const OpDef* op : variants) {
    Instantiator inst(*op, &request, source);
    auto bound = inst.bind_request_attributes();
    if (!bound) {
      // A variant may require an attribute that another one does without.
      if (variants.size() == 1) return bound.error();
      reasons.push_back(fmt::format("line {}: {}", op->loc.line, bound.error().message()));
      continue;
    }
    std::string why;
    if (!inst.inputs_match(&why)) {
      reasons.push_back(fmt::format("line {}: {}", op->loc.line, why));
      continue;
    }
    inst.set_ranks();
    PLANNER_TRY_ASSIGN(bool holds, inst.guard_holds());
    if (!holds) {
      reasons.push_back(
          fmt::format("line {}: guard '{}' is false", op->loc.line, to_string(op->guard)));
      continue;
    }
    return inst.run_request();
  }
  std::string name =
      request.domain.empty() ? request.op_type : request.domain + "." + request.op_type;
  if (variants.empty())
    return make_error("node '{}' ({}): no description", request.node_name, name);
  return make_error("node '{}' ({}): no variant of the description matches ({})", request.node_name,
                    name, fmt::join(reasons, "; "));
}

Expected<Instance> instantiate_standalone(const OpDef& op,
                                          const std::map<std::string, int64_t>& sizes,
                                          const std::map<std::string, AttrValue>& attributes,
                                          const Source* source) {
  Instantiator inst(op, nullptr, source);
  return inst.run_standalone(sizes, attributes);
}

std::string to_string(const Instance& instance) {
  std::vector<std::string> ins;
  for (const auto& in : instance.inputs) {
    std::vector<std::string> dims;
    for (const auto& d : in.dims) dims.push_back(to_string(d));
    std::string s = fmt::format("{}[{}]", in.name, fmt::join(dims, ", "));
    if (in.has_view) {
      std::vector<std::string> view;
      for (const auto& d : in.view) view.push_back(to_string(d));
      s += fmt::format(" as [{}]", fmt::join(view, ", "));
    }
    ins.push_back(s);
  }
  std::vector<std::string> outs, bodies;
  for (size_t o = 0; o < instance.outputs.size(); ++o) {
    const auto& out = instance.outputs[o];
    std::vector<std::string> vars;
    for (size_t k = 0; k < out.vars.size(); ++k)
      vars.push_back(out.extents[k] ? out.vars[k] + " : " + to_string(out.extents[k])
                                    : out.vars[k]);
    outs.push_back(
        fmt::format("{}[{}]{}", out.name, fmt::join(vars, ", "), out.present ? "" : " (absent)"));
    bodies.push_back(to_string(instance.bodies[o]));
  }
  std::string name =
      instance.domain.empty() ? instance.op_type : instance.domain + "." + instance.op_type;
  std::string text =
      outs.size() == 1
          ? fmt::format("op {}({}) -> {} = {}", name, fmt::join(ins, ", "), outs[0], bodies[0])
          : fmt::format("op {}({}) -> ({}) = ({})", name, fmt::join(ins, ", "),
                        fmt::join(outs, ", "), fmt::join(bodies, ", "));
  std::vector<std::string> sizes;
  for (const auto& s : instance.symbols) {
    auto it = instance.sizes.find(s);
    if (it != instance.sizes.end()) sizes.push_back(fmt::format("{} = {}", s, it->second));
  }
  if (!sizes.empty()) text += fmt::format("   # {}", fmt::join(sizes, ", "));
  return text;
}

}  // namespace planner::tdl
