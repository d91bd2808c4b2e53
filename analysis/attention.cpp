#include "analysis/attention.h"

#include <optional>
#include <string_view>

namespace planner::analysis {
namespace {

class CoreFinder {
 public:
  CoreFinder(const ir::Graph& g, const std::vector<bool>* include) : g_(g), include_(include) {}

  bool included(ir::OpId op) const {
    return op != ir::kNoOp && (!include_ || (static_cast<size_t>(op) < include_->size() &&
                                             (*include_)[static_cast<size_t>(op)]));
  }

  // The one included reader of `t`, or kNoOp when it has none or several.
  ir::OpId sole_reader(ir::TensorId t) const {
    ir::OpId found = ir::kNoOp;
    for (ir::OpId c : g_.tensor(t).consumers) {
      if (!included(c)) continue;
      if (found != ir::kNoOp && found != c) return ir::kNoOp;
      found = c;
    }
    return found;
  }

  bool activation(ir::TensorId t) const {
    return t != ir::kNoTensor && g_.tensor(t).role == ir::TensorRole::kActivation &&
           included(g_.tensor(t).producer);
  }

  bool is(const ir::Op& op, std::string_view type) const {
    return op.domain.empty() && op.op_type == type;
  }

  // A product of two activations (not a layer's weight).
  bool activation_product(ir::OpId id) const {
    const ir::Op& op = g_.op(id);
    return is(op, "MatMul") && op.inputs.size() == 2 && activation(op.inputs[0]) &&
           activation(op.inputs[1]);
  }

  std::optional<AttentionCore> from_softmax(ir::OpId softmax) const {
    AttentionCore core;
    core.softmax = softmax;
    std::vector<ir::OpId> before;  // from the softmax back to the scores
    ir::OpId at = softmax;
    for (int depth = 0; depth < 8; ++depth) {
      // The one input of `at` that is an activation only `at` reads: the chain.
      ir::TensorId chain = ir::kNoTensor;
      int candidates = 0;
      // (the chain has the scores' shape; a mask read only here is broadcast to it)
      const ir::Op& reader = g_.op(at);
      for (ir::TensorId t : reader.inputs)
        if (activation(t) && sole_reader(t) == at &&
            g_.tensor(t).shape == g_.tensor(reader.outputs[0]).shape)
          chain = t, ++candidates;
      if (candidates != 1) return std::nullopt;
      const ir::OpId p = g_.tensor(chain).producer;
      if (activation_product(p)) {
        core.scores = p;
        break;
      }
      const ir::Op& op = g_.op(p);
      const bool elementwise = is(op, "Mul") || is(op, "Div") || is(op, "Add") || is(op, "Sub") ||
                               is(op, "Where") || is(op, "Cast");
      if (!elementwise || op.outputs.size() != 1) return std::nullopt;
      before.push_back(p);
      at = p;
    }
    if (core.scores == ir::kNoOp) return std::nullopt;
    core.ops.push_back(core.scores);
    core.ops.insert(core.ops.end(), before.rbegin(), before.rend());
    core.ops.push_back(softmax);
    // Forwards: an optional Dropout, then the product with V.
    ir::TensorId probs = g_.op(softmax).outputs[0];
    ir::OpId next = sole_reader(probs);
    if (next != ir::kNoOp &&
        (is(g_.op(next), "Dropout") ||
         (g_.op(next).domain == "ai.planner" && g_.op(next).op_type == "DropoutTrain"))) {
      core.ops.push_back(next);
      probs = g_.op(next).outputs[0];
      next = sole_reader(probs);
    }
    if (next == ir::kNoOp || !activation_product(next) || g_.op(next).inputs[0] != probs)
      return std::nullopt;
    core.context = next;
    return core;
  }

 private:
  const ir::Graph& g_;
  const std::vector<bool>* include_;
};

}  // namespace

std::vector<AttentionCore> find_attention_cores(const ir::Graph& graph,
                                                const std::vector<bool>* include) {
  CoreFinder finder(graph, include);
  std::vector<AttentionCore> out;
  for (ir::OpId id : graph.topo_order()) {
    const ir::Op& op = graph.op(id);
    if (!finder.included(id) || !op.domain.empty() || op.op_type != "Softmax" ||
        op.outputs.empty() || op.inputs.empty())
      continue;
    if (auto core = finder.from_softmax(id)) out.push_back(std::move(*core));
  }
  return out;
}

}  // namespace planner::analysis
