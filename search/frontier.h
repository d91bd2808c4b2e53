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
  Cost table;                  ///< what the cost tables say (the frontier's own axes)
  PlanMetrics simulated;       ///< what the simulator says
  bool data_parallel = false;  ///< data parallelism itself, which the tables ranked below a point
                               ///< the simulator finds slower
};

/// The frontier over `devices` (every group's cut lists of at most two cuts on them), each
/// point simulated (`judge`: by options.judge, the compiled step; else by the lowering, which
/// follows the same rules and costs less); sorted by simulated peak memory, then time, points
/// the simulator finds dominated left out. Errors: the deadline, or a config the lowering
/// refuses.
Expected<std::vector<FrontierPoint>> compute_frontier(const SearchContext& context,
                                                      const SearchOptions& options,
                                                      const std::vector<int>& devices,
                                                      bool judge = true);

/// Index of the fastest point whose peak memory is within `limit`, or -1 when none fits.
/// `--search frontier` returns this point's plan; `planner frontier` marks it.
int fastest_fitting(const std::vector<FrontierPoint>& points, int64_t limit);

/// GPU counts the fewest-GPUs mode tries on `n` devices: powers of two below n, then n.
std::vector<int> gpu_counts_up_to(int n);

}  // namespace planner::search
