// Data parallelism across blocks of the cluster (docs/search.md, "Replicas"): a plan for n GPUs
// made of one plan for a block of n/D GPUs, repeated D times over the batch. The searches plan
// the block (on the model at a D-th of the batch); the cluster's plan is the block's with the
// batch split once more, D ways, outermost: each operator that reads the batch splits its batch
// variable D times more, and each that does not (parameters' updates) is replicated D times.
// The gradients are then summed over every replica (one all-reduce over the members that hold
// partial sums: inside the block and across blocks), as hierarchical data parallelism does.
//
// Devices: a block of K pipeline stages has B/K GPUs per stage; the cluster's stage s holds
// every replica's stage s, replica k on GPUs [s*n/K + k*B/K, s*n/K + (k+1)*B/K). With one
// stage, replica k is GPUs [k*B, (k+1)*B).
#pragma once

#include <string>
#include <vector>

#include "analysis/lowering.h"
#include "analysis/op_config.h"
#include "support/expected.h"

namespace planner::search {

/// Where replica `copy` of a block's device `inner` sits among `replicas` copies of a block of
/// `block` devices cut into `stages` pipeline stages.
struct ReplicaLayout {
  int block = 1;
  int replicas = 1;
  int stages = 1;

  int devices() const { return block * replicas; }
  int device(int copy, int inner) const;
  /// The (copy, inner device) of a device.
  std::pair<int, int> locate(int device) const;
};

/// Per operator: the index variable that walks the batch, or "" where the operator reads no
/// batch-sized tensor. `half` and `pair` are the same model at batch b and 2b (same operators):
/// an operator is batch-sized where a tensor's shape differs between them, and its variable is
/// the one data parallelism splits whose extent doubles. Errors: the graphs differ, or an
/// operator reads the batch but cannot split it.
Expected<std::vector<std::string>> batch_variables(const analysis::Lowering& half,
                                                   const analysis::Lowering& pair);

/// The configs of `layout.replicas` copies of a block's plan (`inner`, on devices
/// [0, layout.block)): batch variables split `layout.replicas` times more, outermost, and the
/// other operators replicated. An operator marked in `whole` (its shards in the block run the
/// whole operator on gathered inputs: op_shards.h) runs whole on each of its block's devices,
/// on its replica's part of the batch: what its fallback does in the block, kept inside the
/// replica.
std::vector<analysis::OpConfig> replicate_configs(const std::vector<analysis::OpConfig>& inner,
                                                  const std::vector<std::string>& batch_vars,
                                                  const ReplicaLayout& layout,
                                                  const std::vector<char>& whole = {});

/// The layouts of all the cluster's copies (`cluster`), from those of one copy (`one`, on
/// devices [0, block)) and of two (`two`, in the layout `cluster` has with two copies): in each
/// layout the copies multiply one count (the tiles of the batch dimension, the partial sums or
/// the replicas), the copy outermost in it, as two copies show. A tensor whose two copies do not
/// show such a pattern is an error naming it, or, given `missing`, is left empty and marked
/// there (one flag per tensor).
Expected<std::vector<analysis::Sharding>> replicate_layouts(
    const std::vector<analysis::Sharding>& one, const std::vector<analysis::Sharding>& two,
    const ReplicaLayout& cluster, const ir::Graph& graph, std::vector<char>* missing = nullptr);

/// The replica (0 or 1) of each device of two copies (`pair`), and its devices in all copies of
/// `cluster` (same block and stages).
void replica_counterparts(const ReplicaLayout& pair, const ReplicaLayout& cluster,
                          std::vector<int>& replica, std::vector<std::vector<int>>& counterparts);

}  // namespace planner::search
