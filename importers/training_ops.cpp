// Training-mode BatchNormalization and Dropout rewritten into ops that split exactly.
//
// A batch-split BatchNormalization must see the statistics of the whole batch. Splitting the
// node into a per-channel reduction (whose shards hold partial sums, reduced among them like
// any partial result: SyncBatchNorm's all-reduce of 2*C numbers) and an element-wise
// normalisation lets the interval analysis and the partitioner treat it like every other
// reduction, without a rule of its own.
#include "importers/training_ops.h"

#include <fmt/format.h>

namespace planner::importers {

namespace {

constexpr const char* kPlanner = "ai.planner";

bool used(const ir::Graph& g, ir::TensorId t) {
  if (t == ir::kNoTensor) return false;
  if (!g.tensor(t).consumers.empty()) return true;
  for (ir::TensorId o : g.outputs)
    if (o == t) return true;
  return false;
}

std::string fresh_name(const ir::Graph& g, const std::string& base) {
  std::string name = base;
  for (int n = 1; g.find_tensor(name) || g.find_op(name); ++n) name = fmt::format("{}.{}", base, n);
  return name;
}

// Whether BatchNormalization node `op` runs in training mode: the opset 14+ attribute, else
// opset 9-13's extra outputs (the inference form has only Y).
bool batch_norm_training(const ir::Op& op) {
  if (const ir::Attribute* a = op.attribute("training_mode"))
    return a->is_int() && std::get<int64_t>(a->value) != 0;
  for (size_t i = 1; i < op.outputs.size(); ++i)
    if (op.outputs[i] != ir::kNoTensor) return true;
  return false;
}

Expected<void> lower_batch_norm(ir::Graph& g, ir::OpId id, const std::string& source) {
  // Copies: adding tensors and ops moves the graph's storage.
  const ir::Op node = g.op(id);
  auto error = [&](const std::string& what) {
    return make_error("{}: node '{}' (BatchNormalization): {}", source, node.name, what);
  };
  if (node.inputs.size() != 5)
    return error("training mode needs 5 inputs (X, scale, B, input_mean, input_var)");
  for (ir::TensorId t : node.inputs)
    if (t == ir::kNoTensor)
      return error("training mode needs 5 inputs (X, scale, B, input_mean, input_var)");
  const ir::Tensor x = g.tensor(node.inputs[0]);
  if (x.rank() < 2)
    return error(fmt::format("X has shape {}: expected [N, C, ...]", ir::shape_to_string(x.shape)));
  const int64_t channels = x.shape[1];
  int64_t count = 1;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (d != 1) count *= x.shape[d];
  if (count < 1) return error("X is empty");

  ir::Tensor stats;
  stats.name = fresh_name(g, node.name + ":stats");
  stats.dtype = x.dtype;
  stats.shape = {2, channels};
  stats.role = ir::TensorRole::kActivation;
  const ir::TensorId stats_id = g.add_tensor(std::move(stats));

  ir::Op reduce;
  reduce.name = fresh_name(g, node.name + "/stats");
  reduce.op_type = "BatchNormStats";
  reduce.domain = kPlanner;
  reduce.attributes["count"] = ir::Attribute{count};
  reduce.inputs = {node.inputs[0]};
  reduce.outputs = {stats_id};
  g.add_op(std::move(reduce));

  // Running statistics (outputs 1, 2) and opset 9-13's saved batch statistics (3, 4), where
  // the graph reads them.
  bool running = false;
  std::vector<ir::TensorId> stat_outs(4, ir::kNoTensor);
  for (size_t i = 1; i < node.outputs.size() && i <= 4; ++i)
    if (used(g, node.outputs[i])) stat_outs[i - 1] = node.outputs[i], running = true;
  if (running) {
    ir::Op update;
    update.name = fresh_name(g, node.name + "/running_stats");
    update.op_type = "BatchNormRunningStats";
    update.domain = kPlanner;
    update.attributes["momentum"] = ir::Attribute{node.float_attr("momentum", 0.9)};
    update.inputs = {stats_id, node.inputs[3], node.inputs[4]};
    update.outputs = stat_outs;
    g.add_op(std::move(update));
  }

  ir::Op& bn = g.op(id);
  bn.op_type = "BatchNormTrain";
  bn.domain = kPlanner;
  bn.attributes = {{"epsilon", ir::Attribute{node.float_attr("epsilon", 1e-5)}}};
  bn.inputs = {node.inputs[0], node.inputs[1], node.inputs[2], stats_id};
  bn.outputs = {node.outputs[0]};
  return ok();
}

Expected<void> lower_dropout(ir::Graph& g, ir::OpId id, const std::string& source) {
  const ir::Op node = g.op(id);
  auto error = [&](const std::string& what) {
    return make_error("{}: node '{}' (Dropout): {}", source, node.name, what);
  };
  auto input = [&](size_t i) { return i < node.inputs.size() ? node.inputs[i] : ir::kNoTensor; };
  if (input(2) == ir::kNoTensor) return ok();  // inference form
  const ir::Tensor& mode = g.tensor(input(2));
  if (!mode.has_data())
    return ok();  // decided at run time: the runtime's inference kernel checks it
  if (mode.num_elements() != 1) return error("training_mode must be a scalar");
  if (mode.int_values()[0] == 0) return ok();
  double ratio = 0.5;
  if (input(1) != ir::kNoTensor) {
    const ir::Tensor& r = g.tensor(input(1));
    if (!r.has_data() || r.num_elements() != 1)
      return error("ratio must be a constant scalar in training mode");
    ratio = r.float_values()[0];
  }
  if (!(ratio >= 0.0 && ratio < 1.0))
    return error(fmt::format("ratio {} is outside [0, 1)", ratio));
  const ir::Tensor x = g.tensor(node.inputs[0]);
  ir::TensorId mask = node.outputs.size() > 1 ? node.outputs[1] : ir::kNoTensor;
  if (mask == ir::kNoTensor) {  // the backward pass reads the mask: always produce it
    ir::Tensor m;
    m.name = fresh_name(g, g.tensor(node.outputs[0]).name + ":mask");
    m.dtype = ir::DType::kBool;
    m.shape = x.shape;
    m.role = ir::TensorRole::kActivation;
    mask = g.add_tensor(std::move(m));
  }
  ir::Op& d = g.op(id);
  d.op_type = "DropoutTrain";
  d.domain = kPlanner;
  d.attributes = {{"ratio", ir::Attribute{ratio}},
                  {"seed", ir::Attribute{dropout_seed(node.name, node.int_attr("seed", 0))}}};
  d.inputs = {node.inputs[0]};
  d.outputs = {node.outputs[0], mask};
  return ok();
}

}  // namespace

int64_t dropout_seed(const std::string& node_name, int64_t onnx_seed) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : node_name) h = (h ^ c) * 1099511628211ull;
  h ^= static_cast<uint64_t>(onnx_seed) * 0x9e3779b97f4a7c15ull;
  return static_cast<int64_t>(h >> 1);  // non-negative: attributes print and parse as int64
}

Expected<void> lower_training_ops(ir::Graph& graph, const std::string& source) {
  bool changed = false;
  const int n = graph.num_ops();
  for (ir::OpId id = 0; id < n; ++id) {
    const ir::Op& op = graph.op(id);
    if (!op.domain.empty() && op.domain != "ai.onnx") continue;
    if (op.op_type == "BatchNormalization" && batch_norm_training(op)) {
      PLANNER_TRY(lower_batch_norm(graph, id, source));
      changed = true;
    } else if (op.op_type == "Dropout") {
      PLANNER_TRY(lower_dropout(graph, id, source));
      changed = true;
    }
  }
  if (!changed) return ok();
  graph.erase_unused_tensors();  // unread running statistics and their inputs
  return graph.finalize(source);
}

}  // namespace planner::importers
