#include "analysis/fuse_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <variant>

#include "analysis/attention.h"

namespace planner::analysis {
namespace {

using ir::OpId;
using ir::TensorId;

/// The largest mask value that still counts as "masked out" (Megatron-LM fills with -10000,
/// torch exports with the dtype's lowest value or -inf).
constexpr double kMasked = -1e4;

bool is(const ir::Op& op, const char* type) {
  return op.domain.empty() && op.op_type == type;
}

// The value of a one-element floating constant.
std::optional<double> scalar_constant(const ir::Graph& g, TensorId t) {
  const ir::Tensor& c = g.tensor(t);
  if (c.role != ir::TensorRole::kConstant || !c.has_data() || c.num_elements() != 1 ||
      !ir::is_floating(c.dtype))
    return std::nullopt;
  return c.float_values().front();
}

// Whether `values` (S x T, row-major) is the causal pattern: 0 for t <= s, masked above.
bool causal_values(const std::vector<double>& values, int64_t s, int64_t t) {
  if (static_cast<int64_t>(values.size()) != s * t) return false;
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < t; ++j) {
      const double v = values[static_cast<size_t>(i * t + j)];
      if (j <= i ? v != 0.0 : !(v <= kMasked)) return false;
    }
  return true;
}

// Whether the mask tensor is causal: a constant of that pattern, or Trilu<upper=1>(C, 1) of a
// C that masks everywhere: a constant, or ConstantOfShape of one masking value (the planner's
// generated models; the importer folds C only while it is small).
bool causal_mask(const ir::Graph& g, TensorId mask) {
  const ir::Tensor& m = g.tensor(mask);
  if (m.rank() < 2 || m.shape[m.shape.size() - 2] != m.shape.back()) return false;
  for (size_t d = 0; d + 2 < m.shape.size(); ++d)
    if (m.shape[d] != 1) return false;
  if (m.role == ir::TensorRole::kConstant)
    return m.has_data() &&
           causal_values(m.float_values(), m.shape[m.shape.size() - 2], m.shape.back());
  if (m.producer == ir::kNoOp) return false;
  const ir::Op& p = g.op(m.producer);
  if (!is(p, "Trilu") || p.int_attr("upper", 1) != 1 || p.inputs.size() != 2) return false;
  const ir::Tensor& fill = g.tensor(p.inputs[0]);
  const ir::Tensor& k = g.tensor(p.inputs[1]);
  if (k.role != ir::TensorRole::kConstant || !k.has_data() || k.num_elements() != 1 ||
      k.int_values().front() != 1)
    return false;
  std::vector<double> values;
  if (fill.role == ir::TensorRole::kConstant && fill.has_data()) {
    values = fill.float_values();
  } else if (fill.producer != ir::kNoOp && is(g.op(fill.producer), "ConstantOfShape")) {
    // Too large to fold at a long context: ConstantOfShape's one value fills it.
    const ir::Attribute* value = g.op(fill.producer).attribute("value");
    if (!value || !value->is_tensor()) return false;
    const auto& t = std::get<std::shared_ptr<const ir::Tensor>>(value->value);
    if (!t || !t->has_data() || !ir::is_floating(t->dtype)) return false;
    values = t->float_values();
  }
  if (values.empty()) return false;
  for (double v : values)
    if (!(v <= kMasked)) return false;
  return true;
}

struct Rewrite {
  OpId context = ir::kNoOp;
  std::vector<OpId> erased;  // the core's operators
  TensorId q = ir::kNoTensor, kt = ir::kNoTensor, v = ir::kNoTensor;
  TensorId mask = ir::kNoTensor;  // an additive [S, T] bias, when not causal
  double scale = 1.0;
  bool causal = false;
};

// The rewrite of one core, or the reason it stays materialized.
std::variant<Rewrite, std::string> plan_rewrite(const ir::Graph& g, const AttentionCore& core) {
  Rewrite r;
  r.context = core.context;
  const ir::Op& scores = g.op(core.scores);
  const ir::Op& softmax = g.op(core.softmax);
  const ir::Op& context = g.op(core.context);
  r.q = scores.inputs[0];
  r.kt = scores.inputs[1];
  r.v = context.inputs[1];
  const ir::Tensor& q = g.tensor(r.q);
  const ir::Tensor& kt = g.tensor(r.kt);
  const ir::Tensor& v = g.tensor(r.v);
  const int rank = q.rank();
  if (rank < 2 || kt.rank() != rank || v.rank() != rank) return "operands of different ranks";
  for (int d = 0; d + 2 < rank; ++d) {
    const auto i = static_cast<size_t>(d);
    if (kt.shape[i] != q.shape[i] || v.shape[i] != q.shape[i])
      return "broadcast batch or head dimensions";
  }
  const int64_t s = q.shape[static_cast<size_t>(rank - 2)];
  const int64_t t = kt.shape.back();
  if (v.shape[static_cast<size_t>(rank - 2)] != t) return "values of another length than keys";
  const int64_t axis = softmax.int_attr("axis", -1);
  if (axis != -1 && axis != rank - 1) return "softmax over another axis than the keys";
  for (OpId id : core.ops) {
    const ir::Op& op = g.op(id);
    if (id == core.scores || id == core.softmax) continue;
    if (is(op, "Dropout") || op.op_type == "DropoutTrain") return "dropout on the probabilities";
    // The operand that is not the chain: the previous operator's output.
    const bool chain_first = g.tensor(op.inputs[0]).producer != ir::kNoOp &&
                             std::find(core.ops.begin(), core.ops.end(),
                                       g.tensor(op.inputs[0]).producer) != core.ops.end();
    if (op.inputs.size() != 2) return fmt::format("'{}' ({}) in the scores", op.name, op.op_type);
    const TensorId other = op.inputs[chain_first ? 1 : 0];
    const auto c = scalar_constant(g, other);
    if (is(op, "Mul") && c) {
      r.scale *= *c;
    } else if (is(op, "Div") && c && chain_first && *c != 0.0) {
      r.scale /= *c;
    } else if (is(op, "Add") && r.mask == ir::kNoTensor && !r.causal) {
      const ir::Tensor& m = g.tensor(other);
      if (causal_mask(g, other) && m.shape[m.shape.size() - 2] == s && m.shape.back() == t) {
        r.causal = true;
      } else if (m.rank() == 2 && m.shape[0] == s && m.shape[1] == t &&
                 m.dtype == ir::DType::kFloat32) {
        r.mask = other;
      } else {
        return fmt::format("a mask of shape [{}]", fmt::join(m.shape, ", "));
      }
    } else {
      return fmt::format("'{}' ({}) in the scores", op.name, op.op_type);
    }
  }
  // Each intermediate result feeds only the next operator of the core.
  for (size_t i = 0; i + 1 < core.ops.size(); ++i) {
    const ir::Tensor& out = g.tensor(g.op(core.ops[i]).outputs[0]);
    if (out.consumers.size() != 1 || out.consumers[0] != core.ops[i + 1])
      return "an intermediate read elsewhere";
  }
  const ir::Tensor& probs = g.tensor(softmax.outputs[0]);
  if (probs.consumers.size() != 1) return "probabilities read elsewhere";
  r.erased = core.ops;
  r.erased.push_back(core.context);
  return r;
}

std::string fresh(const ir::Graph& g, const std::string& base, bool tensor) {
  for (int i = 0;; ++i) {
    std::string name = i == 0 ? base : fmt::format("{}_{}", base, i);
    if (tensor ? !g.find_tensor(name) : !g.find_op(name)) return name;
  }
}

// K in [..., T, D] layout from K^T: the input of the transpose that made K^T where that was a
// transpose of the last two axes, otherwise a transpose (of that input, or of K^T).
TensorId keys(ir::Graph& g, TensorId kt, const std::string& name) {
  const ir::Tensor& t = g.tensor(kt);
  const size_t rank = t.shape.size();
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  TensorId from = kt;
  if (t.producer != ir::kNoOp && is(g.op(t.producer), "Transpose")) {
    const ir::Op& tr = g.op(t.producer);
    std::vector<int64_t> p = tr.ints_attr("perm");
    if (p.size() == rank) {
      perm = p;
      from = tr.inputs[0];
    }
  }
  std::swap(perm[rank - 2], perm[rank - 1]);
  std::vector<int64_t> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return from;
  ir::Tensor k;
  k.name = fresh(g, name + ":keys", true);
  k.dtype = t.dtype;
  const ir::Tensor& src = g.tensor(from);
  for (int64_t a : perm) k.shape.push_back(src.shape[static_cast<size_t>(a)]);
  k.role = ir::TensorRole::kActivation;
  const TensorId id = g.add_tensor(std::move(k));
  ir::Op op;
  op.name = fresh(g, name + "/keys", false);
  op.op_type = "Transpose";
  op.attributes["perm"] = ir::Attribute{perm};
  op.inputs = {from};
  op.outputs = {id};
  g.add_op(std::move(op));
  return id;
}

}  // namespace

Expected<AttentionFusion> fuse_attention(ir::Graph& graph, const std::string& source) {
  AttentionFusion out;
  std::vector<Rewrite> rewrites;
  for (const AttentionCore& core : find_attention_cores(graph)) {
    auto planned = plan_rewrite(graph, core);
    if (auto* why = std::get_if<std::string>(&planned)) {
      out.kept.emplace_back(graph.op(core.softmax).name, *why);
      continue;
    }
    rewrites.push_back(std::get<Rewrite>(std::move(planned)));
  }
  if (rewrites.empty()) return out;
  std::vector<bool> erase(static_cast<size_t>(graph.num_ops()), false);
  for (Rewrite& r : rewrites) {
    for (OpId id : r.erased) erase[static_cast<size_t>(id)] = true;
    // Copied: add_op below may move the graph's operators.
    const std::string name = graph.op(r.context).name;
    const TensorId y = graph.op(r.context).outputs[0];
    graph.op(r.context).name = fresh(graph, name + ":materialized", false);
    const TensorId k = keys(graph, r.kt, name);
    ir::Tensor lse;
    lse.name = fresh(graph, name + ":lse", true);
    lse.dtype = ir::DType::kFloat32;
    lse.shape = graph.tensor(r.q).shape;
    lse.shape.pop_back();
    lse.role = ir::TensorRole::kActivation;
    const TensorId lse_id = graph.add_tensor(std::move(lse));
    ir::Op op;
    op.name = name;
    op.op_type = "Attention";
    op.domain = "ai.planner";
    op.attributes["scale"] = ir::Attribute{r.scale};
    if (r.causal) op.attributes["causal"] = ir::Attribute{int64_t{1}};
    op.inputs = {r.q, k, r.v};
    if (r.mask != ir::kNoTensor) op.inputs.push_back(r.mask);
    op.outputs = {y, lse_id};
    graph.add_op(std::move(op));
    ++out.fused;
    out.causal += r.causal ? 1 : 0;
  }
  // The core's operators, then what only they read: K^T's transpose, a causal mask's Trilu and
  // the ConstantOfShape that fills it.
  erase.resize(static_cast<size_t>(graph.num_ops()), false);
  std::vector<int> readers(static_cast<size_t>(graph.num_tensors()), 0);
  for (OpId id = 0; id < graph.num_ops(); ++id)
    if (!erase[static_cast<size_t>(id)])
      for (TensorId t : graph.op(id).inputs)
        if (t != ir::kNoTensor) ++readers[static_cast<size_t>(t)];
  for (TensorId t : graph.outputs) ++readers[static_cast<size_t>(t)];
  std::set<OpId> candidates;
  auto read_by = [&](OpId id) {
    for (TensorId t : graph.op(id).inputs)
      if (t != ir::kNoTensor && graph.tensor(t).producer != ir::kNoOp)
        candidates.insert(graph.tensor(t).producer);
  };
  for (const Rewrite& r : rewrites)
    for (OpId id : r.erased) read_by(id);
  while (!candidates.empty()) {
    const OpId id = *candidates.begin();
    candidates.erase(candidates.begin());
    const ir::Op& op = graph.op(id);
    if (erase[static_cast<size_t>(id)] ||
        !(is(op, "Transpose") || is(op, "Trilu") || is(op, "ConstantOfShape")))
      continue;
    bool dead = true;
    for (TensorId t : op.outputs)
      if (t != ir::kNoTensor && readers[static_cast<size_t>(t)] > 0) dead = false;
    if (!dead) continue;
    erase[static_cast<size_t>(id)] = true;
    for (TensorId t : op.inputs)
      if (t != ir::kNoTensor) --readers[static_cast<size_t>(t)];
    read_by(id);
  }
  graph.erase_ops(erase);
  PLANNER_TRY(graph.finalize(source));
  return out;
}

}  // namespace planner::analysis
