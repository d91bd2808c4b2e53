// Planning a cluster as data-parallel replicas of one block (--replicas, search/replicas.h):
// the models the searches and the simulator use instead of the whole cluster's.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/pipeline.h"
#include "search/replicas.h"
#include "search/space.h"

namespace planner::cli {

/// The cluster of n GPUs as `replicas` copies of a block of n / replicas.
struct ReplicaModels {
  int replicas = 1;
  int block = 1;  ///< GPUs per replica
  /// One replica: the model at a replicas-th of the batch, on the cluster's first `block` GPUs;
  /// the searches plan it (`space`: its groups).
  std::unique_ptr<PreparedModel> one;
  std::unique_ptr<search::GroupSpace> space;
  /// Two replicas: the model at two replicas-ths of the batch on the first 2 * block GPUs,
  /// priced as all of them (PreparedModel::replica_set): every figure of a replicated plan is
  /// this compiled step's, simulated.
  std::unique_ptr<PreparedModel> two;
  /// Per operator: the variable that walks the batch ("" where none: replicated).
  std::vector<std::string> batch_vars;

  /// A block's configs as `copies` replicas in the layout of `stages` pipeline stages.
  std::vector<analysis::OpConfig> replicate(const std::vector<analysis::OpConfig>& block_configs,
                                            int copies, int stages) const;
};

/// Above this many GPUs, --replicas auto plans replicas of one node (or of K nodes with K
/// pipeline stages): the flat searches' cost grows with the GPUs, the block's does not.
inline constexpr int kFlatSearchGpus = 64;

/// The replicas --replicas auto gives `flags` on `cluster`: 1 up to kFlatSearchGpus GPUs, in
/// inference, without a global batch, on a cluster that mixes device types
/// or node sizes, or where the replicas would not divide the batch; else one replica per node
/// (per K nodes with K pipeline stages).
int auto_replicas(const PipelineFlags& flags, const importers::Topology& cluster);

/// Commands that plan all the GPUs at once (frontier, compare, simulate) refuse --replicas
/// above 1: prints "error: --replicas N: `why`" and returns true.
bool refuse_replicas(const PipelineFlags& flags, std::string_view why);

/// Prepares the block models of `flags` (whose --replicas is above 1) for `cluster`, the whole
/// cluster's topology. Errors: the replicas do not divide the GPUs or the batch, the cluster
/// mixes device types, the model cannot repeat over the batch. With --zero 2 or 3 the state is
/// sharded inside each replica (FSDP's HYBRID_SHARD) and replicated across them.
Expected<std::unique_ptr<ReplicaModels>> prepare_replicas(const PipelineFlags& flags,
                                                          const importers::Topology& cluster);

}  // namespace planner::cli
