// The memory/time frontier of a model on a topology (TensorOpt), as `planner frontier` shows
// it and `--search frontier` chooses from.
#pragma once

#include <vector>

#include "search/plan.h"
#include "search/search.h"

namespace planner::search {

/// One plan on the frontier.
struct FrontierPoint {
  std::vector<analysis::OpConfig> configs;
  Cost table;         ///< what the cost tables say (the frontier's own axes)
  PlanMetrics simulated;  ///< what the simulator says
};

/// The frontier over `devices` (every group's cut lists of at most two cuts on them), each
/// point simulated; sorted by simulated peak memory, then time. Errors: the deadline, or a
/// config the lowering refuses.
Expected<std::vector<FrontierPoint>> compute_frontier(const SearchContext& context, const SearchOptions& options,
                                                      const std::vector<int>& devices);

}  // namespace planner::search
