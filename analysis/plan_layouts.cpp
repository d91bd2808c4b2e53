// The layouts a plan leaves its tensors in, without lowering the step: see
// Lowering::tensor_shardings in lowering.h.
#include "analysis/lowering.h"
#include "analysis/op_shards.h"

namespace planner::analysis {

Expected<std::vector<Sharding>> Lowering::tensor_shardings(const std::vector<OpConfig>& configs,
                                                           const std::vector<char>* only) const {
  const ir::Graph& g = graph_;
  std::vector<Sharding> out(static_cast<size_t>(g.num_tensors()));
  // Resident tensors an update op owns are kept where that op's shards read them; others
  // where their first reader in step order reads them (as lower() records them).
  const std::vector<ir::OpId> owner = resident_owners(g);
  auto wanted = [&](ir::TensorId t) {
    return t != ir::kNoTensor && (!only || (*only)[static_cast<size_t>(t)]);
  };
  for (ir::OpId id : step_order(g)) {
    const ir::Op& op = g.op(id);
    const OpConfig& c = configs[static_cast<size_t>(id)];
    bool touches = false;
    for (ir::TensorId t : op.outputs) touches |= wanted(t);
    for (ir::TensorId t : op.inputs) touches |= wanted(t) && g.tensor(t).producer == ir::kNoOp;
    if (!touches) continue;
    PLANNER_TRY_ASSIGN(std::shared_ptr<const OpShards> shared, op_shards(id, c));
    const OpShards& shards = *shared;
    for (size_t o = 0; o < op.outputs.size(); ++o)
      if (wanted(op.outputs[o])) out[static_cast<size_t>(op.outputs[o])] = shards.sharding[o];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::TensorId t = op.inputs[i];
      if (!wanted(t) || g.tensor(t).producer != ir::kNoOp) continue;
      const ir::OpId own = owner[static_cast<size_t>(t)];
      Sharding& home = out[static_cast<size_t>(t)];
      if (own != ir::kNoOp ? own != id : !home.devices.empty()) continue;
      std::vector<int> holders;
      std::vector<Box> held;
      for (int s = 0; s < c.num_shards(); ++s) {
        const std::optional<Box>& r = shards.shards[static_cast<size_t>(s)].reads[i];
        if (!r || box_elements(*r) == 0) continue;
        holders.push_back(c.devices[static_cast<size_t>(s)]);
        held.push_back(*r);
      }
      const ir::Tensor& tensor = g.tensor(t);
      home = sharding_of(tensor.shape, holders, held)
                 .value_or(Sharding::replicated(tensor.rank(), c.devices));
    }
  }
  return out;
}

}  // namespace planner::analysis
