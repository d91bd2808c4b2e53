// Turning a search's result (one OpConfig per operator) into a Plan: lowered and simulated for
// its predicted costs, every operator's config and every tensor's layout recorded.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/lowering.h"
#include "analysis/op_config.h"
#include "analysis/training_graph.h"
#include "search/plan.h"
#include "search/search.h"
#include "support/expected.h"

namespace planner::search {

/// The predicted costs of `configs` under the simulator: lowered, simulated, the largest
/// device's peak memory and the bytes sent by all devices. Errors as Lowering::lower.
Expected<PlanMetrics> evaluate_configs(const analysis::Lowering& lowering,
                                       const std::vector<analysis::OpConfig>& configs);

/// options.judge's figures for `configs`, or evaluate_configs' when it is unset.
Expected<PlanMetrics> judge_configs(const analysis::Lowering& lowering,
                                    const SearchOptions& options,
                                    const std::vector<analysis::OpConfig>& configs);

/// The fastest of `candidates` that fits `limit` (or, when none fits, the one needing least
/// memory), and its judged figures. Every candidate is priced by the lowering first; only those
/// within kScreenMargin of the best lowered time (or, when none fits, of the least memory) are
/// judged (options.judge, the compiled step simulated), and the judged figures decide: the
/// lowering follows the compiled step's rules, so it only screens out plans that cannot win.
/// Ties go to the earlier candidate.
struct Pick {
  size_t index = 0;
  PlanMetrics metrics;
};
inline constexpr double kScreenMargin = 0.05;
Expected<Pick> pick_fastest(const analysis::Lowering& lowering, const SearchOptions& options,
                            int64_t limit,
                            const std::vector<const std::vector<analysis::OpConfig>*>& candidates);

/// What a plan records beside its configs.
struct PlanHeader {
  PlanModel model;             ///< name, file hash, forward operator count
  std::string mode = "train";  ///< "train" or "infer"
  PlanSearch search;           ///< the algorithm, seed and options
};

/// Builds the plan of `configs`: ops in graph order with their phase and group (from
/// `training`, null in inference mode), tensors with the layout the lowering gives them,
/// `predicted` from the simulator and `baselines` as given ("data_parallel" must be there).
/// `layouts` given (a plan too large to lower whole): the tensors' layouts, one per tensor, and
/// `predicted` left for the caller to set.
Expected<Plan> build_plan(const analysis::Lowering& lowering,
                          const std::vector<analysis::OpConfig>& configs,
                          const analysis::TrainingGraph* training, PlanHeader header,
                          std::map<std::string, PlanMetrics> baselines,
                          std::optional<std::vector<analysis::Sharding>> layouts = std::nullopt);

}  // namespace planner::search
