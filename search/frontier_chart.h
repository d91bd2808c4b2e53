// The frontier as a picture: an SVG scatter plot of peak memory against step time, one series
// per GPU count, data parallelism, the frontier's choice and the reported plan marked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "search/frontier.h"

namespace planner::search {

/// One GPU count's frontier with its references.
struct FrontierSeries {
  int gpus = 0;
  std::vector<PlanMetrics> points;  ///< the frontier, simulated
  PlanMetrics data_parallel;        ///< data parallelism on the same GPUs
  int chosen = -1;                  ///< index of the fastest point that fits, or -1
  /// A plan drawn on its own as a diamond (`planner plan --report`: the plan written, which
  /// another search may have placed off the frontier); none for `planner frontier`.
  std::optional<PlanMetrics> plan;
};

/// A self-contained SVG document (no scripts, no external resources). Deterministic; `title`
/// may hold any bytes (it is escaped).
std::string frontier_svg(const std::string& title, const std::vector<FrontierSeries>& series,
                         int64_t memory_limit);

}  // namespace planner::search
