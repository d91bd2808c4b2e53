// Rewriting element-wise layer normalisation into LayerNormalization.
#include "importers/fuse_layer_norm.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace planner::importers {
namespace {

// The one op that reads tensor t, if exactly one does and t is not a graph output.
std::optional<ir::OpId> sole_consumer(const ir::Graph& g, ir::TensorId t) {
  const ir::Tensor& tensor = g.tensor(t);
  if (tensor.consumers.size() != 1) return std::nullopt;
  for (ir::TensorId out : g.outputs)
    if (out == t) return std::nullopt;
  return tensor.consumers[0];
}

bool is(const ir::Graph& g, ir::OpId op, const char* type) {
  return g.op(op).op_type == type && g.op(op).domain.empty();
}

// The other input of a two-input op, given one of them.
std::optional<ir::TensorId> other_input(const ir::Op& op, ir::TensorId known) {
  if (op.inputs.size() != 2) return std::nullopt;
  if (op.inputs[0] == known) return op.inputs[1];
  if (op.inputs[1] == known) return op.inputs[0];
  return std::nullopt;
}

// The single value of a constant scalar (or one-element) tensor.
std::optional<double> scalar(const ir::Graph& g, ir::TensorId t) {
  const ir::Tensor& tensor = g.tensor(t);
  if (tensor.role != ir::TensorRole::kConstant || !tensor.has_data() ||
      tensor.num_elements() != 1 || !ir::is_floating(tensor.dtype))
    return std::nullopt;
  return tensor.float_values()[0];
}

// Whether a ReduceMean reduces exactly the last axis, keeping it.
bool mean_over_last(const ir::Graph& g, ir::OpId op) {
  const ir::Op& o = g.op(op);
  if (o.inputs.size() != 1 || o.int_attr("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes = o.ints_attr("axes");
  int64_t rank = g.tensor(o.inputs[0]).rank();
  return axes.size() == 1 && rank >= 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// A 1-D parameter of `width` elements.
bool vector_param(const ir::Graph& g, ir::TensorId t, int64_t width) {
  const ir::Tensor& tensor = g.tensor(t);
  return tensor.role == ir::TensorRole::kParameter && tensor.shape == std::vector<int64_t>{width};
}

}  // namespace

Expected<int> fuse_layer_norm(ir::Graph& graph, const std::string& source) {
  std::vector<bool> erase(static_cast<size_t>(graph.num_ops()), false);
  int fused = 0;
  for (ir::OpId mean1 = 0; mean1 < graph.num_ops(); ++mean1) {
    if (erase[static_cast<size_t>(mean1)] || !is(graph, mean1, "ReduceMean") ||
        !mean_over_last(graph, mean1))
      continue;
    const ir::TensorId x = graph.op(mean1).inputs[0];
    const ir::Tensor& xt = graph.tensor(x);
    if (!ir::is_floating(xt.dtype) || xt.shape.empty()) continue;
    const int64_t width = xt.shape.back();
    auto sub = sole_consumer(graph, graph.op(mean1).outputs[0]);
    if (!sub || !is(graph, *sub, "Sub") || graph.op(*sub).inputs[0] != x) continue;
    const ir::TensorId d = graph.op(*sub).outputs[0];
    const auto& users = graph.tensor(d).consumers;
    if (users.size() != 2 ||
        std::find(graph.outputs.begin(), graph.outputs.end(), d) != graph.outputs.end())
      continue;
    ir::OpId pow = is(graph, users[0], "Pow") ? users[0] : users[1];
    ir::OpId div = pow == users[0] ? users[1] : users[0];
    if (!is(graph, pow, "Pow") || !is(graph, div, "Div")) continue;
    if (graph.op(pow).inputs.size() != 2 || graph.op(pow).inputs[0] != d) continue;
    if (scalar(graph, graph.op(pow).inputs[1]) != 2.0) continue;
    auto mean2 = sole_consumer(graph, graph.op(pow).outputs[0]);
    if (!mean2 || !is(graph, *mean2, "ReduceMean") || !mean_over_last(graph, *mean2)) continue;
    auto add_eps = sole_consumer(graph, graph.op(*mean2).outputs[0]);
    if (!add_eps || !is(graph, *add_eps, "Add")) continue;
    auto eps_tensor = other_input(graph.op(*add_eps), graph.op(*mean2).outputs[0]);
    std::optional<double> eps = eps_tensor ? scalar(graph, *eps_tensor) : std::nullopt;
    if (!eps || *eps < 0) continue;
    auto sqrt = sole_consumer(graph, graph.op(*add_eps).outputs[0]);
    if (!sqrt || !is(graph, *sqrt, "Sqrt")) continue;
    auto div_of_sqrt = sole_consumer(graph, graph.op(*sqrt).outputs[0]);
    if (!div_of_sqrt || *div_of_sqrt != div || graph.op(div).inputs[0] != d) continue;
    auto mul = sole_consumer(graph, graph.op(div).outputs[0]);
    if (!mul || !is(graph, *mul, "Mul")) continue;
    auto scale = other_input(graph.op(*mul), graph.op(div).outputs[0]);
    if (!scale || !vector_param(graph, *scale, width)) continue;
    auto add_bias = sole_consumer(graph, graph.op(*mul).outputs[0]);
    if (!add_bias || !is(graph, *add_bias, "Add")) continue;
    auto bias = other_input(graph.op(*add_bias), graph.op(*mul).outputs[0]);
    if (!bias || !vector_param(graph, *bias, width)) continue;

    // The last Add becomes the LayerNormalization (it keeps its name and output); the rest go.
    ir::Op& ln = graph.op(*add_bias);
    ln.op_type = "LayerNormalization";
    ln.domain.clear();
    ln.inputs = {x, *scale, *bias};
    ln.attributes.clear();
    ln.attributes["axis"] = ir::Attribute{int64_t{-1}};
    ln.attributes["epsilon"] = ir::Attribute{*eps};
    for (ir::OpId gone : {mean1, *sub, pow, *mean2, *add_eps, *sqrt, div, *mul})
      erase[static_cast<size_t>(gone)] = true;
    ++fused;
  }
  if (fused == 0) return 0;
  graph.erase_ops(erase);
  PLANNER_TRY(graph.finalize(source));
  return fused;
}

}  // namespace planner::importers
