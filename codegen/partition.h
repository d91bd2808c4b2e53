// Partitioning: a plan (one OpConfig per operator) becomes one program per rank — the kernels
// each shard runs on its slices and the communication that moves slices between ranks. The
// semantics follow analysis/lowering.h exactly: shards read the boxes their TDL description
// gives, split reductions are all-reduced among the shards holding partials of one tile,
// parameters and optimizer state live where their update operator's shards read them, and
// model inputs and constants are initialised where each consumer reads them.
#pragma once

#include <vector>

#include "analysis/op_config.h"
#include "analysis/op_strategies.h"
#include "codegen/program.h"
#include "ir/graph.h"
#include "support/expected.h"

namespace planner::codegen {

/// Compiles `configs` (one per op of `graph`, graph order) for `num_ranks` ranks (rank r runs
/// device r). `strategies` is analyze_graph's result for `graph`; `train` marks a training
/// step (update operators carry parameters and state to the next step). Errors name the
/// operator whose config does not fit.
Expected<Programs> partition(const ir::Graph& graph, const analysis::GraphStrategies& strategies,
                             const std::vector<analysis::OpConfig>& configs, int num_ranks,
                             bool train);

}  // namespace planner::codegen
