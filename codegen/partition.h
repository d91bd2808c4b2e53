// Partitioning: a plan (one OpConfig per operator) becomes one program per rank — the kernels
// each shard runs on its slices and the communication that moves slices between ranks. The
// semantics follow analysis/lowering.h exactly: shards read the boxes their TDL description
// gives, split reductions are reduced among the shards holding partials of one tile (by an
// all-reduce, or a reduce-scatter where the first consumer wants the tile in chunks), parameters
// and optimizer state live where their update operator's shards read them, and model inputs and
// constants are initialised where each consumer reads them.
#pragma once

#include <vector>

#include "analysis/lowering.h"
#include "analysis/op_config.h"
#include "analysis/tensor_fetch.h"
#include "codegen/program.h"
#include "ir/graph.h"
#include "support/expected.h"

namespace planner::codegen {

/// Choices of the partitioner that do not change what a plan computes.
struct PartitionOptions {
  /// Reduce partial results with a reduce-scatter where their first consumer wants equal
  /// chunks of the tile along one axis, one per holder of a partial; false always all-reduces
  /// (and slices locally), e.g. to compare the data moved.
  bool reduce_scatter = true;
  /// The ranks are data-parallel replicas of one block (search/replicas.h): each fetches from
  /// its own replica (analysis::TensorFetch::Replicas; empty: they are not).
  analysis::TensorFetch::Replicas replicas;
  /// False: constant buffers (and given inputs and parameters) keep their kind and box but not
  /// their bytes. For programs that are only priced: the simulator reads no values, and a
  /// folded constant (a causal mask of 16 MB) held by every rank of a large cluster would
  /// otherwise be copied once per rank.
  bool values = true;
};

/// Compiles `configs` (one per op of the lowering's graph, graph order) for `num_ranks` ranks
/// (rank r runs device r). Each operator's shards are the lowering's (Lowering::op_shards):
/// what they read, whether they run natively or whole, the layouts they leave, so the program
/// is the one the lowering priced. `train` marks a training step (update operators carry
/// parameters and state to the next step). Errors name the operator whose config does not fit.
Expected<Programs> partition(const analysis::Lowering& lowering,
                             const std::vector<analysis::OpConfig>& configs, int num_ranks,
                             bool train, const PartitionOptions& options = {});

}  // namespace planner::codegen
