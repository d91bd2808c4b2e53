// Basic partition strategies by symbolic interval analysis (see strategies.h).
#include "analysis/strategies.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace planner::analysis {
namespace {

using tdl::Expr;
using tdl::ExprKind;
using tdl::ExprPtr;

std::optional<Reducer> reducer_of(std::string_view name) {
  if (name == "sum") return Reducer::kSum;
  if (name == "max") return Reducer::kMax;
  if (name == "min") return Reducer::kMin;
  if (name == "prod") return Reducer::kProd;
  return std::nullopt;
}

// One read of a tensor in a body.
struct Access {
  const Expr* expr;
  bool is_output;  // reads one of the operator's own outputs (state)
  int tensor;      // index into the instance's inputs or outputs
  int body;        // the output body the access is in
};

struct VarInfo {
  // Reduction variables: their extent. Output variables: the extent in the first output that
  // has them (outputs of a Split share names but not extents; see Analyzer::out_ext_).
  std::optional<Affine> extent;
  bool is_output = false;
  std::optional<Reducer> reducer;  // reduction variables
  bool top_level = false;          // bound by a reduction at the top of an output body
  int body = -1;                   // the body binding a reduction variable
};

// An affine form in index variables: Σ coef·var + rest, with `rest` affine in sizes.
struct Linear {
  std::map<std::string, Rational> coefs;
  Affine rest;
};

class Analyzer {
 public:
  Analyzer(const tdl::Instance& inst, bool use_sizes)
      : inst_(inst),
        sizes_(use_sizes ? inst.sizes : std::map<std::string, int64_t>{}),
        use_shapes_(use_sizes) {}

  Expected<OpAnalysis> run() {
    PLANNER_TRY(prepare());
    for (const auto& v : result_.output_vars) {
      PLANNER_TRY_ASSIGN(Strategy s, strategy(v, Strategy::Kind::kOutput));
      result_.strategies.push_back(std::move(s));
    }
    for (const auto& v : result_.reduction_vars) {
      if (!vars_[v].top_level || linked_.count(v)) continue;
      PLANNER_TRY_ASSIGN(Strategy s, strategy(v, Strategy::Kind::kReduction));
      result_.strategies.push_back(std::move(s));
    }
    result_.elementwise = is_elementwise();
    return std::move(result_);
  }

  // Everything run() does before the strategies: bounds, variables, extents. ShardEvaluator
  // stops here and evaluates regions for arbitrary concrete ranges.
  Expected<void> prepare() {
    result_.label = inst_.label();
    for (const auto& s : inst_.symbols)
      if (!sizes_.count(s)) result_.symbolic = true;
    for (const auto& in : inst_.inputs) {
      std::vector<Affine> dims, view;
      for (const auto& d : in.dims) {
        PLANNER_TRY_ASSIGN(Affine a, size_affine(*d));
        dims.push_back(a);
      }
      for (const auto& d : in.access_dims()) {
        PLANNER_TRY_ASSIGN(Affine a, size_affine(*d));
        view.push_back(a);
      }
      Region whole;
      for (const auto& d : dims) whole.dims.push_back(Interval::range(d));
      result_.input_bounds.push_back(whole);
      input_dims_.push_back(std::move(dims));
      access_dims_.push_back(std::move(view));
    }
    PLANNER_TRY(collect_vars());
    PLANNER_TRY(infer_extents());
    link_siblings();
    for (const auto& v : result_.output_vars) result_.extents.push_back({v, *vars_[v].extent});
    for (const auto& v : result_.reduction_vars) result_.extents.push_back({v, *vars_[v].extent});
    return ok();
  }

  // Concrete regions of every input (declared coordinates) and output for one shard: each
  // variable in `ranges` over its [lo, hi], every other variable whole.
  Expected<ShardRegions> shard_regions(
      const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) const {
    for (const auto& [name, r] : ranges)
      if (!vars_.count(name)) return fail(fmt::format("no index variable '{}'", name));
    size_t n_in = inst_.inputs.size(), n_out = inst_.outputs.size();
    // Each body sees its own output's extents; a shard's range is clipped to them.
    auto clipped = [](const Interval& whole, std::pair<int64_t, int64_t> r) {
      int64_t hi = whole.hi().is_constant()
                       ? std::min<int64_t>(r.second, whole.hi().constant().num())
                       : r.second;
      return Interval(Affine(r.first), Affine(std::max<int64_t>(hi, r.first - 1)));
    };
    std::vector<std::map<std::string, Interval>> body_ranges(n_out);
    for (size_t o = 0; o < n_out; ++o) {
      auto& body = body_ranges[o];
      for (const auto& [name, info] : vars_)
        if (!info.is_output) body[name] = Interval::range(*info.extent);
      for (const auto& [name, extent] : out_ext_[o]) body[name] = Interval::range(*extent);
      for (const auto& [name, r] : ranges) {
        if (body.count(name)) body[name] = clipped(body[name], r);
        if (auto sib = siblings_.find(name); sib != siblings_.end())
          for (const auto& v : sib->second)
            if (body.count(v)) body[v] = clipped(body[v], r);
      }
    }
    std::vector<std::optional<Region>> inputs(n_in), states(n_out);
    PLANNER_TRY(read_regions(body_ranges, inputs, states));
    ShardRegions out;
    auto concrete = [&](const Region& r) -> Expected<Box> {
      Box box;
      for (const Interval& i : r.dims) {
        if (!i.is_concrete() || !i.lo().constant().is_integer() || !i.hi().constant().is_integer())
          return fail(fmt::format("region {} is not concrete", r.to_string()));
        int64_t lo = i.lo().constant().num(), hi = i.hi().constant().num();
        box.push_back({lo, std::max(lo, hi + 1)});
      }
      return box;
    };
    for (size_t i = 0; i < n_in; ++i) {
      if (!inputs[i]) {  // not read by any body: nothing of it is needed
        out.inputs.push_back(Box(input_dims_[i].size(), Range{0, 0}));
        continue;
      }
      PLANNER_TRY_ASSIGN(Box b, concrete(to_declared(i, *inputs[i])));
      out.inputs.push_back(std::move(b));
    }
    for (size_t o = 0; o < n_out; ++o) {
      Box box;
      for (const auto& v : inst_.outputs[o].vars) {
        const Interval& i = body_ranges[o].at(v);
        if (!i.is_concrete()) return fail(fmt::format("extent of '{}' is not concrete", v));
        box.push_back({i.lo().constant().num(), i.hi().constant().num() + 1});
      }
      out.outputs.push_back(std::move(box));
    }
    return out;
  }

  const OpAnalysis& prepared() const { return result_; }

 private:
  Error fail(const std::string& message) const {
    return Error(fmt::format("{}: {}", inst_.label(), message));
  }

  Expected<Affine> size_affine(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::kInt:
        return Affine(e.int_value);
      case ExprKind::kName: {
        auto it = sizes_.find(e.name);
        if (it != sizes_.end()) return Affine(it->second);
        return Affine::symbol(e.name);
      }
      case ExprKind::kUnary:
        if (e.name == "-") {
          PLANNER_TRY_ASSIGN(Affine a, size_affine(*e.args[0]));
          return -a;
        }
        break;
      case ExprKind::kBinary: {
        PLANNER_TRY_ASSIGN(Affine a, size_affine(*e.args[0]));
        PLANNER_TRY_ASSIGN(Affine b, size_affine(*e.args[1]));
        if (e.name == "+") return a + b;
        if (e.name == "-") return a - b;
        if (e.name == "*" && b.is_constant()) return a * b.constant();
        if (e.name == "*" && a.is_constant()) return b * a.constant();
        if (e.name == "/" && b.is_constant() && !(b.constant() == Rational(0))) {
          // Sizes divide with floor when known (an output extent like (X - DX) / S + 1).
          if (a.is_constant()) return Affine((a.constant() / b.constant()).floor());
          return a / b.constant();
        }
        return fail(
            fmt::format("size expression '{}' is not affine in the sizes", tdl::to_string(e)));
      }
      default:
        break;
    }
    return fail(fmt::format("cannot evaluate size expression '{}'", tdl::to_string(e)));
  }

  Expected<void> collect_vars() {
    for (size_t o = 0; o < inst_.outputs.size(); ++o) {
      for (const auto& v : inst_.outputs[o].vars) {
        if (!vars_.count(v)) result_.output_vars.push_back(v);
        vars_[v].is_output = true;
      }
    }
    for (size_t o = 0; o < inst_.bodies.size(); ++o) {
      // Reductions at the top of a body (possibly nested with the same reducer) can be split
      // with an output reduction.
      const Expr* top = inst_.bodies[o].get();
      std::optional<Reducer> top_reducer;
      while (top->kind == ExprKind::kReduce &&
             (!top_reducer || reducer_of(top->name) == top_reducer)) {
        top_reducer = reducer_of(top->name);
        for (const auto& v : top->vars) top_level_.insert({static_cast<int>(o), v});
        top = top->args[0].get();
      }
      PLANNER_TRY(walk(*inst_.bodies[o], static_cast<int>(o)));
    }
    // Extents from the node's output shapes or from explicit extents.
    out_ext_.resize(inst_.outputs.size());
    for (size_t o = 0; o < inst_.outputs.size(); ++o) {
      const auto& out = inst_.outputs[o];
      for (size_t d = 0; d < out.vars.size(); ++d) {
        std::optional<Affine>& extent = out_ext_[o][out.vars[d]];
        if (use_shapes_ && out.shape) {
          extent = Affine((*out.shape)[d]);
        } else if (out.extents[d]) {
          PLANNER_TRY_ASSIGN(Affine a, size_affine(*out.extents[d]));
          extent = a;
        }
      }
    }
    return ok();
  }

  Expected<void> walk(const Expr& e, int body) {
    if (e.kind == ExprKind::kAccess) {
      int in = inst_.find_input(e.name);
      if (in >= 0) {
        accesses_.push_back({&e, false, in, body});
      } else {
        int out = inst_.find_output(e.name);
        if (out < 0) return fail(fmt::format("unknown tensor '{}'", e.name));
        accesses_.push_back({&e, true, out, body});
      }
    }
    if (e.kind == ExprKind::kReduce) {
      for (size_t i = 0; i < e.vars.size(); ++i) {
        const std::string& v = e.vars[i];
        if (vars_.count(v)) return fail(fmt::format("index variable '{}' is bound twice", v));
        VarInfo& info = vars_[v];
        info.reducer = reducer_of(e.name);
        info.body = body;
        info.top_level = top_level_.count({body, v}) > 0;
        if (i < e.var_extents.size() && e.var_extents[i]) {
          PLANNER_TRY_ASSIGN(Affine a, size_affine(*e.var_extents[i]));
          info.extent = a;
        }
        result_.reduction_vars.push_back(v);
      }
    }
    for (const auto& a : e.args) PLANNER_TRY(walk(*a, body));
    return ok();
  }

  bool is_var(const std::string& name) const { return vars_.count(name) > 0; }

  // The extent of `v` as seen from output body `body`.
  std::optional<Affine>& ext(int body, const std::string& v) {
    auto& own = out_ext_[static_cast<size_t>(body)];
    auto it = own.find(v);
    return it != own.end() ? it->second : vars_[v].extent;
  }
  const Affine& ext(int body, const std::string& v) const {
    const auto& own = out_ext_[static_cast<size_t>(body)];
    auto it = own.find(v);
    return it != own.end() ? *it->second : *vars_.at(v).extent;
  }

  // The linear form of an index, or nullopt when it is not linear in index variables (it
  // uses / or %, or multiplies a variable by an unknown size).
  std::optional<Linear> linear(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::kInt:
        return Linear{{}, Affine(e.int_value)};
      case ExprKind::kName: {
        if (is_var(e.name)) return Linear{{{e.name, Rational(1)}}, Affine(0)};
        auto a = size_affine(e);
        if (!a) return std::nullopt;
        return Linear{{}, *a};
      }
      case ExprKind::kUnary: {
        if (e.name != "-") return std::nullopt;
        auto a = linear(*e.args[0]);
        if (!a) return std::nullopt;
        for (auto& [v, c] : a->coefs) c = -c;
        a->rest = -a->rest;
        return a;
      }
      case ExprKind::kBinary: {
        auto a = linear(*e.args[0]);
        auto b = linear(*e.args[1]);
        if (!a || !b) return std::nullopt;
        if (e.name == "+" || e.name == "-") {
          Rational sign = e.name == "+" ? Rational(1) : Rational(-1);
          for (const auto& [v, c] : b->coefs) a->coefs[v] = a->coefs[v] + c * sign;
          a->rest = a->rest + b->rest * sign;
          return a;
        }
        if (e.name == "*") {
          if (a->coefs.empty() && a->rest.is_constant()) std::swap(a, b);
          if (!b->coefs.empty() || !b->rest.is_constant()) return std::nullopt;
          Rational k = b->rest.constant();
          for (auto& [v, c] : a->coefs) c = c * k;
          a->rest = a->rest * k;
          return a;
        }
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

  // Output extents follow from the index expressions: a variable read directly in a dimension
  // of size D covers D positions; in `c·v + rest` it covers floor((D - 1 - max(rest)) / c) + 1
  // (Conv1d's x: X - DX + 1, ShiftTwo's i: N - 2).
  Expected<void> infer_extents() {
    for (const auto& acc : accesses_) {
      if (acc.is_output) continue;
      const auto& dims = access_dims_[static_cast<size_t>(acc.tensor)];
      for (size_t d = 0; d < acc.expr->args.size() && d < dims.size(); ++d) {
        const Expr& index = *acc.expr->args[d];
        if (index.kind == ExprKind::kName && is_var(index.name) && !ext(acc.body, index.name))
          ext(acc.body, index.name) = dims[d];
      }
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& acc : accesses_) {
        if (acc.is_output) continue;
        const auto& dims = access_dims_[static_cast<size_t>(acc.tensor)];
        for (size_t d = 0; d < acc.expr->args.size() && d < dims.size(); ++d) {
          auto lin = linear(*acc.expr->args[d]);
          if (!lin) continue;
          std::string unknown;
          int unknown_count = 0;
          for (const auto& [v, c] : lin->coefs)
            if (!(c == Rational(0)) && !ext(acc.body, v)) ++unknown_count, unknown = v;
          if (unknown_count != 1) continue;
          Rational c = lin->coefs[unknown];
          if (c < Rational(0)) continue;
          Affine upper = lin->rest;
          for (const auto& [v, k] : lin->coefs)
            if (v != unknown && Rational(0) < k)
              upper = upper + (*ext(acc.body, v) - Affine(1)) * k;
          Affine room = dims[d] - Affine(1) - upper;
          Affine extent =
              room.is_constant() ? Affine((room.constant() / c).floor() + 1) : room / c + Affine(1);
          ext(acc.body, unknown) = extent;
          changed = true;
        }
      }
    }
    // An output variable no access determines (an opaque function's result, Tofu's
    // BatchCholesky `i, j`) gets the output's own size symbol, `out.d`, as its extent.
    // A variable that only a sibling output determines takes its extent from there.
    for (size_t o = 0; o < inst_.outputs.size(); ++o) {
      const auto& out = inst_.outputs[o];
      for (size_t d = 0; d < out.vars.size(); ++d) {
        std::optional<Affine>& extent = out_ext_[o][out.vars[d]];
        for (size_t p = 0; p < out_ext_.size() && !extent; ++p) {
          auto it = out_ext_[p].find(out.vars[d]);
          if (it != out_ext_[p].end() && it->second) extent = it->second;
        }
        if (extent) continue;
        extent = Affine::symbol(fmt::format("{}.{}", out.name, d));
        result_.symbolic = true;
      }
    }
    for (size_t o = out_ext_.size(); o-- > 0;)
      for (const auto& [v, extent] : out_ext_[o]) vars_[v].extent = extent;
    for (const auto& v : result_.reduction_vars)
      if (!vars_[v].extent)
        return fail(fmt::format(
            "cannot infer the extent of reduction variable '{}'; bind it as '{} < extent'", v, v));
    return ok();
  }

  // The interval of an index; nullopt where it cannot be bounded symbolically (a division by
  // a size whose value is unknown), which callers widen to the whole dimension.
  Expected<std::optional<Interval>> eval_index(const Expr& e,
                                               const std::map<std::string, Interval>& ranges,
                                               const Expr& access) const {
    auto fail_index = [&](const std::string& why) {
      return fail(fmt::format("cannot analyse index '{}' of '{}': {}", tdl::to_string(e),
                              tdl::to_string(access), why));
    };
    switch (e.kind) {
      case ExprKind::kInt:
        return std::optional<Interval>(Interval::point(Affine(e.int_value)));
      case ExprKind::kName: {
        auto it = ranges.find(e.name);
        if (it != ranges.end()) return std::optional<Interval>(it->second);
        PLANNER_TRY_ASSIGN(Affine a, size_affine(e));
        return std::optional<Interval>(Interval::point(a));
      }
      case ExprKind::kUnary: {
        if (e.name != "-") return fail_index(fmt::format("operator '{}' on an interval", e.name));
        PLANNER_TRY_ASSIGN(std::optional<Interval> a, eval_index(*e.args[0], ranges, access));
        if (!a) return a;
        return std::optional<Interval>(-*a);
      }
      case ExprKind::kBinary: {
        PLANNER_TRY_ASSIGN(std::optional<Interval> ua, eval_index(*e.args[0], ranges, access));
        PLANNER_TRY_ASSIGN(std::optional<Interval> ub, eval_index(*e.args[1], ranges, access));
        const std::string& op = e.name;
        bool comparison = op != "+" && op != "-" && op != "*" && op != "/" && op != "%";
        if ((!ua || !ub) && !comparison) return std::optional<Interval>();
        if (!ua || !ub) return fail_index(fmt::format("comparison '{}' of intervals", op));
        const Interval& a = *ua;
        const Interval& b = *ub;
        if (op == "+") return std::optional<Interval>(a + b);
        if (op == "-") return std::optional<Interval>(a - b);
        if (op == "*") {
          auto p = multiply(a, b);
          if (!p)
            return fail(fmt::format("operator '*' in index '{}' of '{}': {}", tdl::to_string(e),
                                    tdl::to_string(access), p.error().message()));
          return std::optional<Interval>(*p);
        }
        if (op == "/" || op == "%") {
          // A divisor that is a size of unknown value (`co / CO` in a grouped convolution)
          // cannot be bounded affinely: the caller takes the whole dimension instead.
          if (b.lo() == b.hi() && !b.is_concrete()) return std::optional<Interval>();
          if (!b.is_constant_point() || !b.lo().constant().is_integer() ||
              b.lo().constant().num() <= 0)
            return fail(fmt::format(
                "operator '{}' in index '{}' of '{}': divisor {} is not a positive constant", op,
                tdl::to_string(e), tdl::to_string(access), b.to_string()));
          int64_t k = b.lo().constant().num();
          return std::optional<Interval>(op == "/" ? a.floor_div(k) : a.mod(k));
        }
        return fail(fmt::format(
            "operator '{}' in index '{}' of '{}': comparison of two intervals {} and {}", op,
            tdl::to_string(e), tdl::to_string(access), a.to_string(), b.to_string()));
      }
      default:
        return fail_index("not an affine expression");
    }
  }

  // The regions every access reads for one assignment of ranges to variables.
  Expected<void> read_regions(const std::vector<std::map<std::string, Interval>>& body_ranges,
                              std::vector<std::optional<Region>>& inputs,
                              std::vector<std::optional<Region>>& outputs) const {
    for (const auto& acc : accesses_) {
      const auto& ranges = body_ranges[static_cast<size_t>(acc.body)];
      std::vector<Interval> bounds;
      if (acc.is_output) {
        for (const auto& v : inst_.outputs[static_cast<size_t>(acc.tensor)].vars)
          bounds.push_back(Interval::range(ext(acc.tensor, v)));
      } else {
        for (const auto& d : access_dims_[static_cast<size_t>(acc.tensor)])
          bounds.push_back(Interval::range(d));
      }
      if (acc.expr->args.size() != bounds.size())
        return fail(fmt::format("'{}' has {} indices for {} dimensions", tdl::to_string(*acc.expr),
                                acc.expr->args.size(), bounds.size()));
      Region region;
      for (size_t d = 0; d < bounds.size(); ++d) {
        const Expr& index = *acc.expr->args[d];
        if (index.kind == ExprKind::kWhole) {
          region.dims.push_back(bounds[d]);
          continue;
        }
        PLANNER_TRY_ASSIGN(std::optional<Interval> i, eval_index(index, ranges, *acc.expr));
        // Reads outside a tensor are padding (or another part of a concat): clip them.
        region.dims.push_back(i ? clip(*i, bounds[d]) : bounds[d]);
      }
      auto& slot = (acc.is_output ? outputs : inputs)[static_cast<size_t>(acc.tensor)];
      if (!slot) {
        slot = region;
      } else {
        for (size_t d = 0; d < bounds.size(); ++d)
          slot->dims[d] = hull(slot->dims[d], region.dims[d], bounds[d]);
      }
    }
    return ok();
  }

  // Converts a region in a view's coordinates to the declared tensor's: a run of view
  // dimensions that multiply to one declared dimension maps to Σ index·stride, which is exact
  // when the inner dimensions of the run are whole and a bounding range otherwise.
  Region to_declared(size_t input, const Region& view_region) const {
    const auto& view = access_dims_[input];
    const auto& dims = input_dims_[input];
    const Region& whole = result_.input_bounds[input];
    if (!inst_.inputs[input].has_view) return view_region;
    if (view_region.is_empty()) {
      Region empty;
      for (size_t d = 0; d < dims.size(); ++d)
        empty.dims.push_back(Interval(Affine(0), Affine(-1)));
      return empty;
    }
    auto times = [](const Affine& a, const Affine& b) -> std::optional<Affine> {
      if (b.is_constant()) return a * b.constant();
      if (a.is_constant()) return b * a.constant();
      return std::nullopt;
    };
    Region out;
    size_t j = 0;
    for (size_t i = 0; i < dims.size(); ++i) {
      size_t start = j;
      std::optional<Affine> product;
      while (j < view.size()) {
        product = product ? times(*product, view[j]) : view[j];
        ++j;
        if (!product || *product == dims[i]) break;
      }
      if (!product || !(*product == dims[i])) return whole;  // not a refinement: report all
      std::optional<Affine> lo = Affine(0), hi = Affine(0), stride = Affine(1);
      for (size_t k = j; k-- > start;) {
        auto l = times(view_region.dims[k].lo(), *stride);
        auto h = times(view_region.dims[k].hi(), *stride);
        if (!l || !h) {
          lo = hi = std::nullopt;
          break;
        }
        lo = *lo + *l;
        hi = *hi + *h;
        stride = times(*stride, view[k]);
        if (!stride) {
          lo = hi = std::nullopt;
          break;
        }
      }
      out.dims.push_back(lo && hi ? Interval(*lo, *hi) : whole.dims[i]);
    }
    return out;
  }

  // Top-level reductions of different output bodies over the same loop split together: the
  // instantiation renames the second `n` of `(sum(n: ...), sum(n: ...))` to `n_2`, and a split
  // of `n` alone would leave the other output reading its whole input (BatchNormParamGrad's
  // dB, LayerNormParamGrad's dB, a batch split of data parallelism). A `v_k` whose `v` is a
  // top-level reduction of another body, with the same extent and reducer, is linked to it:
  // no strategy of its own, split with `v`, its output partial too.
  void link_siblings() {
    for (const auto& v : result_.reduction_vars) {
      const VarInfo& info = vars_.at(v);
      const size_t us = v.rfind('_');
      if (!info.top_level || us == std::string::npos || us == 0 || us + 1 == v.size() ||
          v.find_first_not_of("0123456789", us + 1) != std::string::npos)
        continue;
      auto base = vars_.find(v.substr(0, us));
      if (base == vars_.end() || base->second.is_output || !base->second.top_level ||
          base->second.body == info.body || base->second.reducer != info.reducer ||
          !base->second.extent || !info.extent || !(*base->second.extent == *info.extent))
        continue;
      siblings_[base->first].push_back(v);
      linked_.insert(v);
    }
  }

  // Worker w's half of `var` in output body `body`.
  Interval worker_half(size_t body, const std::string& var, Strategy::Kind kind, int w) const {
    const Affine& extent =
        kind == Strategy::Kind::kOutput ? ext(static_cast<int>(body), var) : *vars_.at(var).extent;
    return Interval::range(extent).halves()[static_cast<size_t>(w)];
  }

  // A split along the axis a recurrence runs on is no parallel split: where a body reads its own
  // output shifted along the split dimension (LSTM's Y[s - 1, ...] under a split of s), each
  // worker waits for the one before it, so the workers would run one after the other. Such a
  // split is invalid. A read of the whole dimension (the hidden state under a split of h) is an
  // exchange every step, which the lowering prices, and stays valid.
  void mark_sequential(Strategy& s) const {
    for (size_t o = 0; o < s.state_regions.size(); ++o) {
      if (!s.state_regions[o]) continue;
      const std::vector<std::string>& vars = inst_.outputs[o].vars;
      for (size_t d = 0; d < vars.size(); ++d) {
        if (vars[d] != s.var) continue;
        Interval whole = Interval::range(ext(static_cast<int>(o), vars[d]));
        for (size_t w = 0; w < 2; ++w) {
          const Region& state = (*s.state_regions[o])[w];
          const Region& out = s.output_regions[o][w];
          if (d >= state.dims.size() || d >= out.dims.size()) continue;
          if (state.dims[d] == out.dims[d] || state.dims[d] == whole) continue;
          s.valid = false;
          s.invalid_reason =
              fmt::format("sequential: output {} reads itself along {} (a recurrence)", o, s.var);
          return;
        }
      }
    }
  }

  Expected<Strategy> strategy(const std::string& var, Strategy::Kind kind) const {
    Strategy s;
    s.var = var;
    s.kind = kind;
    const Affine& extent = *vars_.at(var).extent;
    s.range = Interval::range(extent);
    s.halves = s.range.halves();
    if (extent.is_constant() && extent.constant() < Rational(2)) {
      s.valid = false;
      s.invalid_reason = fmt::format("extent {}", extent.to_string());
    }
    size_t n_in = inst_.inputs.size(), n_out = inst_.outputs.size();
    s.input_regions.resize(n_in);
    s.input_view_regions.resize(n_in);
    s.output_regions.resize(n_out);
    s.state_regions.resize(n_out);
    for (int w = 0; w < 2; ++w) {
      // Each body sees its own output's extents (a Split's outputs differ in size).
      std::vector<std::map<std::string, Interval>> body_ranges(n_out);
      for (size_t o = 0; o < n_out; ++o) {
        auto& ranges = body_ranges[o];
        for (const auto& [name, info] : vars_)
          if (!info.is_output) ranges[name] = Interval::range(*info.extent);
        for (const auto& [name, extent] : out_ext_[o]) ranges[name] = Interval::range(*extent);
        if (ranges.count(var)) ranges[var] = worker_half(o, var, kind, w);
        if (auto sib = siblings_.find(var);
            sib != siblings_.end() && kind == Strategy::Kind::kReduction)
          for (const auto& v : sib->second)
            if (ranges.count(v)) ranges[v] = worker_half(o, v, kind, w);
      }
      std::vector<std::optional<Region>> inputs(n_in), states(n_out);
      PLANNER_TRY(read_regions(body_ranges, inputs, states));
      for (size_t i = 0; i < n_in; ++i) {
        Region view;
        if (inputs[i]) {
          view = *inputs[i];
        } else {
          // Not read by any body (a shape input): the worker needs none of it.
          for (size_t d = 0; d < access_dims_[i].size(); ++d)
            view.dims.push_back(Interval(Affine(0), Affine(-1)));
        }
        s.input_view_regions[i][static_cast<size_t>(w)] = view;
        s.input_regions[i][static_cast<size_t>(w)] = to_declared(i, view);
      }
      for (size_t o = 0; o < n_out; ++o) {
        Region region;
        for (const auto& v : inst_.outputs[o].vars) {
          bool split_here = kind == Strategy::Kind::kOutput && v == var;
          region.dims.push_back(split_here ? worker_half(o, v, kind, w)
                                           : Interval::range(ext(static_cast<int>(o), v)));
        }
        s.output_regions[o][static_cast<size_t>(w)] = region;
        if (states[o]) {
          if (!s.state_regions[o]) s.state_regions[o] = WorkerRegions{};
          (*s.state_regions[o])[static_cast<size_t>(w)] = *states[o];
        }
      }
    }
    if (s.valid && kind == Strategy::Kind::kOutput) mark_sequential(s);
    for (size_t i = 0; i < n_in; ++i)
      s.replicated.push_back(s.input_regions[i][0] == result_.input_bounds[i] &&
                             s.input_regions[i][1] == result_.input_bounds[i]);
    s.reduced_outputs.assign(n_out, false);
    if (kind == Strategy::Kind::kReduction) {
      s.output_reduction = vars_.at(var).reducer;
      s.reduced_outputs[static_cast<size_t>(vars_.at(var).body)] = true;
      if (auto sib = siblings_.find(var); sib != siblings_.end())
        for (const auto& v : sib->second)
          s.reduced_outputs[static_cast<size_t>(vars_.at(v).body)] = true;
    }
    return s;
  }

  static bool has_node(const Expr& e, ExprKind kind, std::string_view name = "") {
    if (e.kind == kind && (name.empty() || e.name == name)) return true;
    for (const auto& a : e.args)
      if (has_node(*a, kind, name)) return true;
    return false;
  }

  bool is_elementwise() const {
    if (!result_.reduction_vars.empty() || inst_.outputs.empty()) return false;
    const auto& vars = inst_.outputs[0].vars;
    for (const auto& out : inst_.outputs)
      if (out.vars != vars) return false;
    for (const auto& body : inst_.bodies)
      if (has_node(*body, ExprKind::kCall, "opaque") || has_node(*body, ExprKind::kCall, "concat"))
        return false;
    for (const auto& acc : accesses_) {
      if (acc.is_output) return false;
      const auto& args = acc.expr->args;
      const auto& dims = access_dims_[static_cast<size_t>(acc.tensor)];
      if (args.size() != vars.size() || dims.size() != args.size()) return false;
      for (size_t d = 0; d < args.size(); ++d) {
        const Expr& index = *args[d];
        const Affine& extent = ext(acc.body, vars[d]);
        if (index.kind == ExprKind::kName && index.name == vars[d] && extent == dims[d]) continue;
        // A size-1 dimension read at 0 under an output dimension of extent 1 is the identity too.
        if (index.kind == ExprKind::kInt && index.int_value == 0 && dims[d] == Affine(1) &&
            extent == Affine(1))
          continue;
        return false;
      }
    }
    return true;
  }

  const tdl::Instance& inst_;
  std::map<std::string, int64_t> sizes_;
  bool use_shapes_;
  OpAnalysis result_;
  std::vector<std::vector<Affine>> input_dims_;
  std::vector<std::vector<Affine>> access_dims_;
  std::map<std::string, VarInfo> vars_;
  std::map<std::string, std::vector<std::string>> siblings_;  // see link_siblings()
  std::set<std::string> linked_;                              // vars split with a sibling
  // Per output, the extent of each of its index variables.
  std::vector<std::map<std::string, std::optional<Affine>>> out_ext_;
  std::set<std::pair<int, std::string>> top_level_;
  std::vector<Access> accesses_;
};

}  // namespace

std::string_view reducer_name(Reducer reducer) {
  switch (reducer) {
    case Reducer::kSum:
      return "sum";
    case Reducer::kMax:
      return "max";
    case Reducer::kMin:
      return "min";
    case Reducer::kProd:
      return "prod";
  }
  return "?";
}

const Strategy* OpAnalysis::find(std::string_view var) const {
  for (const auto& s : strategies)
    if (s.var == var) return &s;
  return nullptr;
}

const Affine& OpAnalysis::extent(std::string_view var) const {
  for (const auto& [name, e] : extents)
    if (name == var) return e;
  PLANNER_CHECK(false, "no index variable '{}'", var);
  return extents.front().second;
}

namespace {

Expected<OpAnalysis> run_checked(const tdl::Instance& instance, bool use_sizes) {
  clear_rational_overflow();
  auto result = Analyzer(instance, use_sizes).run();
  if (rational_overflowed()) {
    clear_rational_overflow();
    return make_error(
        "{}: arithmetic overflow in the interval analysis (sizes or constants too large)",
        instance.label());
  }
  return result;
}

}  // namespace

Expected<OpAnalysis> analyze(const tdl::Instance& instance) {
  return run_checked(instance, true);
}

Expected<OpAnalysis> analyze_symbolic(const tdl::Instance& instance) {
  return run_checked(instance, false);
}

std::string to_string(const OpAnalysis& analysis, const tdl::Instance& instance) {
  std::string out;
  std::vector<std::string> extents;
  for (const auto& [v, e] : analysis.extents)
    extents.push_back(fmt::format("{} = {}", v, e.to_string()));
  out += fmt::format("extents: {}\n", fmt::join(extents, ", "));
  if (analysis.elementwise) out += "element-wise\n";
  for (const auto& s : analysis.strategies) {
    std::string kind =
        s.kind == Strategy::Kind::kOutput
            ? "output"
            : fmt::format("reduction, {} of partial outputs", reducer_name(*s.output_reduction));
    out += fmt::format("split {} ({}): {} | {}{}\n", s.var, kind, s.halves[0].to_range_string(),
                       s.halves[1].to_range_string(),
                       s.valid ? "" : fmt::format(" (invalid: {})", s.invalid_reason));
    for (size_t i = 0; i < s.input_regions.size(); ++i) {
      out += fmt::format("  {}: {} | {}{}\n", instance.inputs[i].name,
                         s.input_regions[i][0].to_string(), s.input_regions[i][1].to_string(),
                         s.replicated[i] ? " (replicated)" : "");
    }
    for (size_t o = 0; o < s.output_regions.size(); ++o) {
      out += fmt::format("  -> {}: {} | {}{}\n", instance.outputs[o].name,
                         s.output_regions[o][0].to_string(), s.output_regions[o][1].to_string(),
                         s.reduced_outputs[o] ? " (partial)" : "");
      if (s.state_regions[o])
        out +=
            fmt::format("  state {}: {} | {}\n", instance.outputs[o].name,
                        (*s.state_regions[o])[0].to_string(), (*s.state_regions[o])[1].to_string());
    }
  }
  return out;
}

struct ShardEvaluator::Impl {
  tdl::Instance instance;  // the Analyzer keeps a reference: the copy lives here
  std::unique_ptr<Analyzer> analyzer;
};

ShardEvaluator::ShardEvaluator() = default;
ShardEvaluator::~ShardEvaluator() = default;
ShardEvaluator::ShardEvaluator(ShardEvaluator&&) noexcept = default;
ShardEvaluator& ShardEvaluator::operator=(ShardEvaluator&&) noexcept = default;

Expected<ShardEvaluator> ShardEvaluator::create(const tdl::Instance& instance) {
  ShardEvaluator e;
  e.impl_ = std::make_unique<Impl>();
  e.impl_->instance = instance;
  e.impl_->analyzer = std::make_unique<Analyzer>(e.impl_->instance, true);
  PLANNER_TRY(e.impl_->analyzer->prepare());
  for (const auto& [var, extent] : e.impl_->analyzer->prepared().extents) {
    if (!extent.is_constant() || !extent.constant().is_integer())
      return make_error("{}: extent of '{}' is not concrete", instance.label(), var);
    e.extents_[var] = extent.constant().num();
  }
  return e;
}

int64_t ShardEvaluator::extent(std::string_view var) const {
  auto it = extents_.find(std::string(var));
  PLANNER_CHECK(it != extents_.end(), "no index variable '{}'", var);
  return it->second;
}

Expected<ShardRegions> ShardEvaluator::evaluate(
    const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) const {
  return impl_->analyzer->shard_regions(ranges);
}

}  // namespace planner::analysis
