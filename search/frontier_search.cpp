// Frontier tracking (TensorOpt 3.2) and the min-time mode over it.
#include <algorithm>

#include <fmt/format.h>

#include "search/elimination.h"
#include "search/frontier.h"
#include "search/plan_builder.h"

namespace planner::search {

Expected<std::vector<FrontierPoint>> compute_frontier(const SearchContext& context, const SearchOptions& options,
                                                      const std::vector<int>& devices) {
  const GroupSpace& space = context.space;
  const Deadline deadline = Deadline::after(options.budget_s);
  std::vector<std::vector<CutList>> candidates(static_cast<size_t>(space.num_groups()));
  for (int g = 0; g < space.num_groups(); ++g)
    candidates[static_cast<size_t>(g)] = space.candidates(g, static_cast<int>(devices.size()));
  if (options.progress) options.progress(0.0, "pricing candidates");
  PLANNER_TRY_ASSIGN(CostTables tables, CostTables::build(space, candidates, devices, deadline));
  if (options.progress) options.progress(0.4, "tracking the frontier");
  EliminationOptions eo;
  eo.track_memory = true;
  eo.max_points = std::max(2, options.frontier_points);
  eo.deadline = deadline;
  PLANNER_TRY_ASSIGN(EliminationResult frontier, eliminate(tables, eo));
  std::vector<FrontierPoint> out;
  for (size_t i = 0; i < frontier.choices.size(); ++i) {
    if (options.progress)
      options.progress(0.6 + 0.4 * static_cast<double>(i) / static_cast<double>(frontier.choices.size()),
                       fmt::format("simulating frontier plan {} of {}", i + 1, frontier.choices.size()));
    std::vector<CutList> cuts;
    for (int g = 0; g < space.num_groups(); ++g)
      cuts.push_back(candidates[static_cast<size_t>(g)][static_cast<size_t>(frontier.choices[i][static_cast<size_t>(g)])]);
    FrontierPoint p;
    p.configs = space.plan(cuts, devices);
    p.table = frontier.costs[i];
    PLANNER_TRY_ASSIGN(p.simulated, evaluate_configs(context.lowering, p.configs));
    out.push_back(std::move(p));
  }
  std::stable_sort(out.begin(), out.end(), [](const FrontierPoint& a, const FrontierPoint& b) {
    return a.simulated.peak_memory_bytes != b.simulated.peak_memory_bytes
               ? a.simulated.peak_memory_bytes < b.simulated.peak_memory_bytes
               : a.simulated.step_time_s < b.simulated.step_time_s;
  });
  return out;
}

Expected<SearchResult> run_frontier(const SearchContext& context, const SearchOptions& options) {
  const int n = context.lowering.topology().num_devices();
  PLANNER_TRY_ASSIGN(std::vector<FrontierPoint> points, compute_frontier(context, options, all_devices(n)));
  const int64_t limit = options.memory_limit > 0 ? options.memory_limit : default_memory_limit(context.lowering.topology());
  SearchResult r;
  r.options["frontier_points"] = options.frontier_points;
  r.options["memory_limit_bytes"] = limit;
  r.plans_evaluated = static_cast<int64_t>(points.size());
  const FrontierPoint* best = nullptr;
  for (const FrontierPoint& p : points)
    if (p.simulated.peak_memory_bytes <= limit && (!best || p.simulated.step_time_s < best->simulated.step_time_s))
      best = &p;
  if (!best) {
    // Nothing fits: the smallest point, which the caller reports as not fitting.
    best = &points.front();
    r.notes.push_back("no frontier plan fits the memory limit");
  }
  r.configs = best->configs;
  return r;
}

}  // namespace planner::search
