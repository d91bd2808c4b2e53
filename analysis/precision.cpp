// Storage types under mixed precision.
#include "analysis/precision.h"

#include <cmath>
#include <vector>

namespace planner::analysis {

namespace {

// Activations the model asks to keep in f32: the output of a Cast to f32 of an activation
// (torch's `.float()` before the loss) and what the forward pass computes from such tensors
// alone, with their recomputed clones and their gradients, as autocast leaves them f32.
std::vector<bool> widened(const ir::Graph& graph, const TrainingGraph* training) {
  const auto nt = static_cast<size_t>(graph.num_tensors());
  std::vector<bool> wide(nt, false);
  auto activation = [&](ir::TensorId t) {
    return t != ir::kNoTensor && graph.tensor(t).role == ir::TensorRole::kActivation &&
           ir::is_floating(graph.tensor(t).dtype);
  };
  for (ir::OpId id : graph.topo_order()) {
    if (training && training->op_phase[static_cast<size_t>(id)] != Phase::kForward) continue;
    const ir::Op& op = graph.op(id);
    bool from = false;
    if (op.domain.empty() && op.op_type == "Cast") {
      from = op.int_attr("to", 0) == static_cast<int64_t>(ir::DType::kFloat32) &&
             !op.inputs.empty() && activation(op.inputs[0]);
    } else {
      bool any = false, all = true;
      for (ir::TensorId t : op.inputs)
        if (activation(t)) any = true, all = all && wide[static_cast<size_t>(t)];
      from = any && all;
    }
    if (from)
      for (ir::TensorId t : op.outputs)
        if (activation(t)) wide[static_cast<size_t>(t)] = true;
  }
  if (training)
    for (size_t t = 0; t < nt; ++t) {
      const ir::TensorId of =
          t < training->tensor_of_grad.size() ? training->tensor_of_grad[t] : ir::kNoTensor;
      const ir::TensorId orig =
          t < training->recomputes.size() ? training->recomputes[t] : ir::kNoTensor;
      if ((of != ir::kNoTensor && wide[static_cast<size_t>(of)]) ||
          (orig != ir::kNoTensor && wide[static_cast<size_t>(orig)]))
        wide[t] = true;
    }
  return wide;
}

// --precision fp8: the linear layers' products (a MatMul or Gemm reading a parameter) and the
// matrix products of their gradients run on FP8 tensor cores. The last such product, the LM
// head, stays 16-bit, as torchtitan's float8 conversion skips the `output` layer (and
// Transformer Engine recipes keep the head in bf16).
void mark_fp8(ir::Graph& graph, const TrainingGraph* training) {
  auto forward = [&](ir::OpId id) {
    return !training || training->op_phase[static_cast<size_t>(id)] == Phase::kForward;
  };
  auto product = [&](const ir::Op& op) {
    return (op.domain.empty() && (op.op_type == "MatMul" || op.op_type == "Gemm")) ||
           (op.domain == "ai.planner" &&
            (op.op_type == "MatMulTransB" || op.op_type == "MatMulGradWeight"));
  };
  std::vector<bool> linear(static_cast<size_t>(graph.num_ops()), false);
  ir::OpId last = ir::kNoOp;
  for (ir::OpId id : graph.topo_order()) {
    const ir::Op& op = graph.op(id);
    if (!forward(id) || !op.domain.empty() || !product(op)) continue;
    bool weight = false;
    for (ir::TensorId t : op.inputs)
      weight |= t != ir::kNoTensor && graph.tensor(t).role == ir::TensorRole::kParameter;
    if (!weight) continue;
    linear[static_cast<size_t>(id)] = true;
    last = id;
  }
  if (last != ir::kNoOp) linear[static_cast<size_t>(last)] = false;
  for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
    ir::Op& op = graph.op(id);
    const ir::OpId group = training ? training->op_group[static_cast<size_t>(id)] : id;
    op.fp8 = product(op) && group != ir::kNoOp && linear[static_cast<size_t>(group)];
  }
}

}  // namespace

void apply_precision(ir::Graph& graph, const TrainingGraph* training, ir::Precision precision,
                     bool half_parameter_gradients) {
  if (!ir::is_mixed(precision)) return;
  const ir::DType half = ir::activation_dtype(precision);
  // Tensors the update reads or writes keep f32: the master weights' gradients and state
  // (the gradients made by the backward pass in 16 bit with half_parameter_gradients).
  std::vector<bool> keep(static_cast<size_t>(graph.num_tensors()), false);
  if (training) {
    auto phase = [&](ir::OpId id) { return training->op_phase[static_cast<size_t>(id)]; };
    auto parameter_gradient = [&](ir::TensorId t) {
      const ir::TensorId of = training->tensor_of_grad[static_cast<size_t>(t)];
      return of != ir::kNoTensor && graph.tensor(of).role == ir::TensorRole::kParameter;
    };
    auto half_gradient = [&](ir::TensorId t) {
      const ir::OpId p = graph.tensor(t).producer;
      return half_parameter_gradients && parameter_gradient(t) && p != ir::kNoOp &&
             phase(p) != Phase::kUpdate;
    };
    for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
      if (phase(id) != Phase::kUpdate) continue;
      const ir::Op& op = graph.op(id);
      for (ir::TensorId t : op.inputs)
        if (t != ir::kNoTensor && !half_gradient(t)) keep[static_cast<size_t>(t)] = true;
      for (ir::TensorId t : op.outputs)
        if (t != ir::kNoTensor) keep[static_cast<size_t>(t)] = true;
    }
    for (ir::TensorId t = 0; t < graph.num_tensors(); ++t)
      if (parameter_gradient(t) && !half_gradient(t)) keep[static_cast<size_t>(t)] = true;
  }
  const std::vector<bool> wide = widened(graph, training);
  for (size_t t = 0; t < wide.size(); ++t)
    if (wide[t]) keep[t] = true;
  // Fused attention keeps its rows' log-sum-exp in f32, as FlashAttention does: the backward
  // pass exponentiates against it.
  for (const ir::Op& op : graph.ops())
    if (op.domain == "ai.planner" && op.op_type == "Attention" && op.outputs.size() > 1 &&
        op.outputs[1] != ir::kNoTensor)
      keep[static_cast<size_t>(op.outputs[1])] = true;
  for (ir::TensorId t = 0; t < graph.num_tensors(); ++t) {
    ir::Tensor& tensor = graph.tensor(t);
    if (tensor.role != ir::TensorRole::kActivation || tensor.dtype != ir::DType::kFloat32) continue;
    if (keep[static_cast<size_t>(t)]) continue;
    tensor.dtype = half;
  }
  if (ir::uses_fp8(precision)) mark_fp8(graph, training);
  if (training) apply_loss_scale(graph);
}

void apply_loss_scale(ir::Graph& graph) {
  // The largest output's element count M sets S = 2^round(log2 M): the seeds y / M become
  // about y, as GradScaler's scaled loss makes them, and 1/S is exact in every format.
  double largest = 1;
  for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
    const ir::Op& op = graph.op(id);
    if (op.op_type == "LossGrad" && op.domain == "ai.planner")
      largest = std::max(largest, 1.0 / op.float_attr("scale", 1.0));
  }
  const double s = std::ldexp(1.0, static_cast<int>(std::lround(std::log2(largest))));
  if (s == 1) return;
  for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
    ir::Op& op = graph.op(id);
    if (op.domain != "ai.planner") continue;
    if (op.op_type == "LossGrad")
      op.attributes["scale"] = ir::Attribute{op.float_attr("scale", 1.0) * s};
    else if (op.op_type == "SGD" || op.op_type == "Momentum" || op.op_type == "Adam")
      op.attributes["grad_scale"] = ir::Attribute{1.0 / s};
  }
}

}  // namespace planner::analysis
