// Tied embeddings kept as two copies: see tied_copies.h.
#include "analysis/tied_copies.h"

#include <algorithm>

namespace planner::analysis {
namespace {

bool is_product(const ir::Op& op) {
  if (op.domain.empty()) return op.op_type == "MatMul" || op.op_type == "Gemm";
  return op.domain == "ai.planner" && op.op_type == "MatMulTransB";
}

}  // namespace

Expected<std::vector<TiedCopy>> copy_tied_embeddings(ir::Graph& g, const std::string& source) {
  std::vector<TiedCopy> out;
  const int tensors = g.num_tensors();
  for (ir::TensorId t = 0; t < tensors; ++t) {
    const ir::Tensor& tensor = g.tensor(t);
    if (tensor.role != ir::TensorRole::kParameter) continue;
    std::vector<ir::OpId> readers = tensor.consumers;
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    if (readers.size() != 2) continue;
    ir::OpId lookup = ir::kNoOp, head = ir::kNoOp;
    for (ir::OpId r : readers) {
      const ir::Op& op = g.op(r);
      if (op.domain.empty() && op.op_type == "Gather" && !op.inputs.empty() && op.inputs[0] == t)
        lookup = r;
      else if (is_product(op))
        head = r;
    }
    if (lookup == ir::kNoOp || head == ir::kNoOp) continue;
    ir::Tensor copy = tensor;
    copy.name = tensor.name + kCopySuffix;
    copy.consumers.clear();
    copy.producer = ir::kNoOp;
    if (g.find_tensor(copy.name)) continue;  // a model that names a tensor so keeps its own
    const ir::TensorId c = g.add_tensor(std::move(copy));
    for (ir::TensorId& in : g.op(head).inputs)
      if (in == t) in = c;
    out.push_back({t, c});
  }
  if (!out.empty()) PLANNER_TRY(g.finalize(source));
  return out;
}

ir::TensorId copied_from(const ir::Graph& graph, ir::TensorId t) {
  const std::string& name = graph.tensor(t).name;
  const std::string suffix = kCopySuffix;
  if (graph.tensor(t).role != ir::TensorRole::kParameter || !name.ends_with(suffix))
    return ir::kNoTensor;
  auto original = graph.find_tensor(name.substr(0, name.size() - suffix.size()));
  if (!original || graph.tensor(*original).shape != graph.tensor(t).shape) return ir::kNoTensor;
  return *original;
}

}  // namespace planner::analysis
