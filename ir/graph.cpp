// Graph construction, validation, topological order and the text form.
#include "ir/graph.h"

#include <algorithm>
#include <cstring>
#include <queue>
#include <sstream>

#include <fmt/format.h>

#include "support/saturate.h"

namespace planner::ir {

std::string_view role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kInput:
      return "input";
    case TensorRole::kParameter:
      return "param";
    case TensorRole::kActivation:
      return "activation";
    case TensorRole::kConstant:
      return "const";
    case TensorRole::kOptimizerState:
      return "state";
  }
  return "?";
}

int64_t Tensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Reads element i of raw data in `dtype` as double; integer types convert exactly up to 2^53.
double element_as_double(const Tensor& t, int64_t i) {
  const uint8_t* p = t.data.data() + i * dtype_size(t.dtype);
  switch (t.dtype) {
    case DType::kFloat32:
      return load<float>(p);
    case DType::kFloat64:
      return load<double>(p);
    case DType::kInt8:
      return load<int8_t>(p);
    case DType::kUInt8:
      return load<uint8_t>(p);
    case DType::kInt16:
      return load<int16_t>(p);
    case DType::kUInt16:
      return load<uint16_t>(p);
    case DType::kInt32:
      return load<int32_t>(p);
    case DType::kUInt32:
      return load<uint32_t>(p);
    case DType::kInt64:
      return static_cast<double>(load<int64_t>(p));
    case DType::kUInt64:
      return static_cast<double>(load<uint64_t>(p));
    case DType::kBool:
      return load<uint8_t>(p) ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

int64_t element_as_int(const Tensor& t, int64_t i) {
  const uint8_t* p = t.data.data() + i * dtype_size(t.dtype);
  switch (t.dtype) {
    case DType::kInt64:
      return load<int64_t>(p);
    case DType::kUInt64:
      return static_cast<int64_t>(load<uint64_t>(p));
    default:
      return saturating_int64(element_as_double(t, i));
  }
}

}  // namespace

std::vector<int64_t> Tensor::int_values() const {
  PLANNER_CHECK(has_data(), "tensor '{}' has no data", name);
  int64_t n = static_cast<int64_t>(data.size()) / dtype_size(dtype);
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = element_as_int(*this, i);
  return out;
}

std::vector<double> Tensor::float_values() const {
  PLANNER_CHECK(has_data(), "tensor '{}' has no data", name);
  int64_t n = static_cast<int64_t>(data.size()) / dtype_size(dtype);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = element_as_double(*this, i);
  return out;
}

std::string Attribute::to_string() const {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(const std::string& v) const { return fmt::format("\"{}\"", v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ","));
    }
    std::string operator()(const std::vector<double>& v) const {
      return fmt::format("[{}]", fmt::join(v, ","));
    }
    std::string operator()(const std::vector<std::string>& v) const {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ",\"" : "\"") + v[i] + "\"";
      return out + "]";
    }
    std::string operator()(const std::shared_ptr<const Tensor>& t) const {
      if (!t) return "tensor()";
      std::string out =
          fmt::format("tensor<{}{}>", dtype_name(t->dtype), shape_to_string(t->shape));
      if (t->has_data() && t->num_elements() <= 8 && t->dtype != DType::kString) {
        if (is_floating(t->dtype))
          out += fmt::format("({})", fmt::join(t->float_values(), ","));
        else
          out += fmt::format("({})", fmt::join(t->int_values(), ","));
      }
      return out;
    }
  };
  return std::visit(Visitor{}, value);
}

const Attribute* Op::attribute(std::string_view key) const {
  auto it = attributes.find(std::string(key));
  return it == attributes.end() ? nullptr : &it->second;
}

int64_t Op::int_attr(std::string_view key, int64_t fallback) const {
  const Attribute* a = attribute(key);
  if (a && a->is_int()) return std::get<int64_t>(a->value);
  return fallback;
}

double Op::float_attr(std::string_view key, double fallback) const {
  const Attribute* a = attribute(key);
  if (a && a->is_float()) return std::get<double>(a->value);
  if (a && a->is_int()) return static_cast<double>(std::get<int64_t>(a->value));
  return fallback;
}

std::string Op::string_attr(std::string_view key, std::string_view fallback) const {
  const Attribute* a = attribute(key);
  if (a && a->is_string()) return std::get<std::string>(a->value);
  return std::string(fallback);
}

std::vector<int64_t> Op::ints_attr(std::string_view key, std::vector<int64_t> fallback) const {
  const Attribute* a = attribute(key);
  if (a && a->is_ints()) return std::get<std::vector<int64_t>>(a->value);
  return fallback;
}

TensorId Graph::add_tensor(Tensor tensor) {
  auto id = static_cast<TensorId>(tensors_.size());
  PLANNER_CHECK(!tensor_index_.count(tensor.name), "duplicate tensor '{}'", tensor.name);
  tensor_index_.emplace(tensor.name, id);
  tensors_.push_back(std::move(tensor));
  return id;
}

OpId Graph::add_op(Op op) {
  auto id = static_cast<OpId>(ops_.size());
  for (TensorId t : op.inputs)
    PLANNER_CHECK(t == kNoTensor || (t >= 0 && t < num_tensors()), "op '{}': bad input id {}",
                  op.name, t);
  for (TensorId t : op.outputs)
    PLANNER_CHECK(t == kNoTensor || (t >= 0 && t < num_tensors()), "op '{}': bad output id {}",
                  op.name, t);
  // Duplicate op names are reported by finalize(), which has the file name; index the first.
  op_index_.emplace(op.name, id);
  ops_.push_back(std::move(op));
  return id;
}

std::optional<TensorId> Graph::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  if (it == tensor_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<OpId> Graph::find_op(std::string_view name) const {
  auto it = op_index_.find(std::string(name));
  if (it == op_index_.end()) return std::nullopt;
  return it->second;
}

Expected<void> Graph::finalize(const std::string& source) {
  auto fail = [&](Error e) -> Expected<void> { return e.with_context(source); };
  auto node_where = [&](const Op& op) {
    return fmt::format("node '{}' ({})", op.name, op.op_type);
  };

  for (Tensor& t : tensors_) {
    t.producer = kNoOp;
    t.consumers.clear();
    for (int64_t d : t.shape)
      if (d < 0)
        return fail(make_error("tensor '{}' has negative dimension {} in shape {}", t.name, d,
                               shape_to_string(t.shape)));
    // Byte size must fit in int64.
    __int128 bytes = dtype_size(t.dtype);
    for (int64_t d : t.shape) {
      bytes *= d;
      if (bytes > static_cast<__int128>(INT64_MAX))
        return fail(make_error("tensor '{}' with shape {} is too large: its byte size overflows",
                               t.name, shape_to_string(t.shape)));
    }
  }

  std::unordered_map<std::string, OpId> seen_ops;
  for (OpId id = 0; id < num_ops(); ++id) {
    const Op& op = ops_[static_cast<size_t>(id)];
    if (!seen_ops.emplace(op.name, id).second)
      return fail(make_error("{}: duplicate node name", node_where(op)));
    for (TensorId t : op.outputs) {
      if (t == kNoTensor) continue;
      Tensor& out = tensors_[static_cast<size_t>(t)];
      if (out.producer != kNoOp)
        return fail(make_error("{}: output '{}' is also produced by node '{}'", node_where(op),
                               out.name, ops_[static_cast<size_t>(out.producer)].name));
      if (out.role != TensorRole::kActivation)
        return fail(make_error("{}: output '{}' is also a model {}", node_where(op), out.name,
                               role_name(out.role)));
      out.producer = id;
    }
  }

  for (OpId id = 0; id < num_ops(); ++id) {
    const Op& op = ops_[static_cast<size_t>(id)];
    for (TensorId t : op.inputs) {
      if (t == kNoTensor) continue;
      Tensor& in = tensors_[static_cast<size_t>(t)];
      if (in.role == TensorRole::kActivation && in.producer == kNoOp)
        return fail(
            make_error("{}: input '{}' is not defined (no node produces it and it is "
                       "not a graph input or initializer)",
                       node_where(op), in.name));
      in.consumers.push_back(id);
    }
  }
  for (TensorId t : outputs) {
    const Tensor& out = tensors_[static_cast<size_t>(t)];
    if (out.role == TensorRole::kActivation && out.producer == kNoOp)
      return fail(make_error("graph output '{}' is not defined", out.name));
  }

  // Kahn's algorithm with a min-heap on op id: deterministic and close to model order.
  std::vector<int> pending(ops_.size(), 0);
  std::vector<std::vector<OpId>> followers(ops_.size());  // ops that wait for this one (after)
  for (OpId id = 0; id < num_ops(); ++id) {
    const Op& op = ops_[static_cast<size_t>(id)];
    for (TensorId t : op.inputs)
      if (t != kNoTensor && tensors_[static_cast<size_t>(t)].producer != kNoOp)
        ++pending[static_cast<size_t>(id)];
    for (OpId a : op.after) {
      if (a < 0 || a >= num_ops() || a == id)
        return fail(
            make_error("{}: waits for an operator that is not in the graph", node_where(op)));
      followers[static_cast<size_t>(a)].push_back(id);
      ++pending[static_cast<size_t>(id)];
    }
  }
  std::priority_queue<OpId, std::vector<OpId>, std::greater<>> ready;
  for (OpId id = 0; id < num_ops(); ++id)
    if (pending[static_cast<size_t>(id)] == 0) ready.push(id);
  topo_order_.clear();
  while (!ready.empty()) {
    OpId id = ready.top();
    ready.pop();
    topo_order_.push_back(id);
    for (TensorId t : ops_[static_cast<size_t>(id)].outputs) {
      if (t == kNoTensor) continue;
      for (OpId c : tensors_[static_cast<size_t>(t)].consumers)
        if (--pending[static_cast<size_t>(c)] == 0) ready.push(c);
    }
    for (OpId c : followers[static_cast<size_t>(id)])
      if (--pending[static_cast<size_t>(c)] == 0) ready.push(c);
  }
  if (topo_order_.size() != ops_.size()) {
    for (OpId id = 0; id < num_ops(); ++id)
      if (pending[static_cast<size_t>(id)] > 0)
        return fail(make_error("{}: the graph has a cycle through this node",
                               node_where(ops_[static_cast<size_t>(id)])));
  }
  return ok();
}

void Graph::erase_ops(const std::vector<bool>& erase) {
  PLANNER_CHECK(erase.size() == ops_.size(), "erase mask has {} entries for {} ops", erase.size(),
                ops_.size());
  std::vector<Op> kept;
  kept.reserve(ops_.size());
  std::vector<OpId> renumber(ops_.size(), kNoOp);
  for (size_t i = 0; i < ops_.size(); ++i)
    if (!erase[i]) {
      renumber[i] = static_cast<OpId>(kept.size());
      kept.push_back(std::move(ops_[i]));
    }
  ops_ = std::move(kept);
  for (Op& op : ops_) {
    std::vector<OpId> after;
    for (OpId a : op.after)
      if (a >= 0 && static_cast<size_t>(a) < renumber.size() &&
          renumber[static_cast<size_t>(a)] != kNoOp)
        after.push_back(renumber[static_cast<size_t>(a)]);
    op.after = std::move(after);
  }
  op_index_.clear();
  for (OpId id = 0; id < num_ops(); ++id) op_index_.emplace(ops_[static_cast<size_t>(id)].name, id);
  erase_unused_tensors();
  topo_order_.clear();
}

void Graph::erase_unused_tensors() {
  std::vector<bool> used(tensors_.size(), false);
  for (const Op& op : ops_) {
    for (TensorId t : op.inputs)
      if (t != kNoTensor) used[static_cast<size_t>(t)] = true;
    for (TensorId t : op.outputs)
      if (t != kNoTensor) used[static_cast<size_t>(t)] = true;
  }
  for (TensorId t : inputs) used[static_cast<size_t>(t)] = true;
  for (TensorId t : outputs) used[static_cast<size_t>(t)] = true;

  std::vector<TensorId> remap(tensors_.size(), kNoTensor);
  std::vector<Tensor> kept;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<TensorId>(kept.size());
    kept.push_back(std::move(tensors_[i]));
  }
  tensors_ = std::move(kept);
  tensor_index_.clear();
  for (TensorId id = 0; id < num_tensors(); ++id)
    tensor_index_.emplace(tensors_[static_cast<size_t>(id)].name, id);
  auto fix = [&](std::vector<TensorId>& ids) {
    for (TensorId& t : ids)
      if (t != kNoTensor) t = remap[static_cast<size_t>(t)];
  };
  for (Op& op : ops_) {
    fix(op.inputs);
    fix(op.outputs);
  }
  fix(inputs);
  fix(outputs);
  for (Tensor& t : tensors_) {
    t.producer = kNoOp;
    t.consumers.clear();
  }
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

std::string to_text(const Graph& graph) {
  std::ostringstream out;
  auto type_of = [&](TensorId id) {
    const Tensor& t = graph.tensor(id);
    return fmt::format("{}{}", dtype_name(t.dtype), shape_to_string(t.shape));
  };
  auto ref = [&](TensorId id) -> std::string {
    if (id == kNoTensor) return "_";
    const Tensor& t = graph.tensor(id);
    return t.role == TensorRole::kActivation ? "%" + t.name : t.name;
  };
  out << "graph " << graph.name << "\n";
  for (TensorId id : graph.inputs) out << "  input  " << ref(id) << ": " << type_of(id) << "\n";
  for (TensorId id = 0; id < graph.num_tensors(); ++id) {
    const Tensor& t = graph.tensor(id);
    if (t.role == TensorRole::kParameter)
      out << "  param  " << t.name << ": " << type_of(id) << "\n";
    else if (t.role == TensorRole::kConstant)
      out << "  const  " << t.name << ": " << type_of(id) << "\n";
    else if (t.role == TensorRole::kOptimizerState)
      out << "  state  " << t.name << ": " << type_of(id) << "\n";
  }
  for (OpId id : graph.topo_order()) {
    const Op& op = graph.op(id);
    std::vector<std::string> outs, ins, attrs;
    for (TensorId t : op.outputs) outs.push_back(t == kNoTensor ? "_" : ref(t) + ": " + type_of(t));
    for (TensorId t : op.inputs) ins.push_back(ref(t));
    for (const auto& [key, attr] : op.attributes) attrs.push_back(key + "=" + attr.to_string());
    std::string type = op.domain.empty() ? op.op_type : op.domain + "." + op.op_type;
    out << "  " << fmt::format("{}", fmt::join(outs, ", ")) << " = " << type;
    if (!attrs.empty()) out << "<" << fmt::format("{}", fmt::join(attrs, ", ")) << ">";
    out << "(" << fmt::format("{}", fmt::join(ins, ", ")) << ")  # '" << op.name << "'";
    for (OpId a : op.after) out << " after '" << graph.op(a).name << "'";
    out << "\n";
  }
  for (TensorId id : graph.outputs) out << "  output " << ref(id) << "\n";
  return out.str();
}

}  // namespace planner::ir
