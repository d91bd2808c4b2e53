// Frontier tracking (TensorOpt 3.2) and the min-time mode over it.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "search/elimination.h"
#include "search/frontier.h"
#include "search/plan_builder.h"
#include "support/parallel.h"

namespace planner::search {

namespace {

// Sorted by simulated memory then time; points the simulator finds dominated (or equal to a
// kept one) leave the frontier.
std::vector<FrontierPoint> undominated(std::vector<FrontierPoint> out) {
  std::stable_sort(out.begin(), out.end(), [](const FrontierPoint& a, const FrontierPoint& b) {
    return a.simulated.peak_memory_bytes != b.simulated.peak_memory_bytes
               ? a.simulated.peak_memory_bytes < b.simulated.peak_memory_bytes
               : a.simulated.step_time_s < b.simulated.step_time_s;
  });
  std::vector<FrontierPoint> kept;
  for (FrontierPoint& p : out)
    if (kept.empty() || p.simulated.step_time_s < kept.back().simulated.step_time_s)
      kept.push_back(std::move(p));
  return kept;
}

// Each point's figures by options.judge (the compiled step), then the frontier again.
Expected<std::vector<FrontierPoint>> judged(const SearchContext& context,
                                            const SearchOptions& options,
                                            std::vector<FrontierPoint> points) {
  std::vector<std::optional<Error>> errors(points.size());
  WorkerPool pool(options.threads);
  pool.for_each(static_cast<int>(points.size()), [&](int i, int) {
    FrontierPoint& p = points[static_cast<size_t>(i)];
    auto m = judge_configs(context.lowering, options, p.configs);
    if (m)
      p.simulated = *m;
    else
      errors[static_cast<size_t>(i)] = m.error();
  });
  for (auto& e : errors)
    if (e) return *e;
  return undominated(std::move(points));
}

}  // namespace

Expected<std::vector<FrontierPoint>> compute_frontier(const SearchContext& context,
                                                      const SearchOptions& options,
                                                      const std::vector<int>& devices, bool judge) {
  const GroupSpace& space = context.space;
  const Deadline deadline = Deadline::after(options.budget_s);
  std::vector<std::vector<CutList>> candidates(static_cast<size_t>(space.num_groups()));
  for (int g = 0; g < space.num_groups(); ++g)
    candidates[static_cast<size_t>(g)] = space.candidates(g, static_cast<int>(devices.size()));
  if (options.progress) options.progress(0.0, "pricing candidates");
  PLANNER_TRY_ASSIGN(CostTables tables, CostTables::build(space, candidates, devices, deadline,
                                                          Objective::kTime, options.threads));
  if (options.progress) options.progress(0.4, "tracking the frontier");
  EliminationOptions eo;
  eo.track_memory = true;
  eo.max_points = std::max(2, options.frontier_points);
  eo.deadline = deadline;
  eo.threads = options.threads;
  PLANNER_TRY_ASSIGN(EliminationResult frontier, eliminate(tables, eo));
  if (options.progress)
    options.progress(0.6, fmt::format("simulating {} frontier plans", frontier.choices.size()));
  // Each point is lowered and simulated on its own (the lowering is safe to share).
  std::vector<FrontierPoint> out(frontier.choices.size());
  std::vector<std::optional<Error>> errors(out.size());
  WorkerPool pool(options.threads);
  pool.for_each(static_cast<int>(out.size()), [&](int i, int) {
    std::vector<CutList> cuts;
    for (int g = 0; g < space.num_groups(); ++g)
      cuts.push_back(candidates[static_cast<size_t>(g)][static_cast<size_t>(
          frontier.choices[static_cast<size_t>(i)][static_cast<size_t>(g)])]);
    FrontierPoint& p = out[static_cast<size_t>(i)];
    p.configs = space.plan(cuts, devices);
    p.table = frontier.costs[static_cast<size_t>(i)];
    auto simulated = evaluate_configs(context.lowering, p.configs);
    if (simulated)
      p.simulated = *simulated;
    else
      errors[static_cast<size_t>(i)] = simulated.error();
  });
  for (auto& e : errors)
    if (e) return *e;
  // Data parallelism is a point of the space (every group cut along its batch), but a sum of
  // table costs can rank it below a plan the simulator finds slower: it joins the candidates,
  // so the frontier is never beaten by it.
  {
    PLANNER_TRY_ASSIGN(
        auto dp, analysis::baseline_configs(context.lowering, analysis::Baseline::kDataParallel,
                                            static_cast<int>(devices.size())));
    FrontierPoint p;
    p.configs = std::move(dp);
    PLANNER_TRY_ASSIGN(p.simulated, evaluate_configs(context.lowering, p.configs));
    p.table = {p.simulated.step_time_s, static_cast<double>(p.simulated.peak_memory_bytes)};
    p.data_parallel = true;
    out.push_back(std::move(p));
  }
  if (judge) return judged(context, options, undominated(std::move(out)));
  return undominated(std::move(out));
}

int fastest_fitting(const std::vector<FrontierPoint>& points, int64_t limit) {
  int best = -1;
  for (size_t i = 0; i < points.size(); ++i)
    if (points[i].simulated.peak_memory_bytes <= limit &&
        (best < 0 ||
         points[i].simulated.step_time_s < points[static_cast<size_t>(best)].simulated.step_time_s))
      best = static_cast<int>(i);
  return best;
}

std::vector<int> gpu_counts_up_to(int n) {
  std::vector<int> counts;
  for (int g = 1; g < n; g *= 2) counts.push_back(g);
  counts.push_back(n);
  return counts;
}

Expected<SearchResult> run_frontier(const SearchContext& context, const SearchOptions& options) {
  const int n = context.lowering.topology().num_devices();
  const int64_t limit = options.memory_limit > 0
                            ? options.memory_limit
                            : default_memory_limit(context.lowering.topology());
  SearchResult r;
  r.options["frontier_points"] = options.frontier_points;
  if (options.min_gpus) r.options["min_gpus"] = true;
  std::vector<FrontierPoint> points;
  int chosen = -1, used = n;
  if (options.min_gpus) {
    // The fewest GPUs (1, 2, 4, …) whose frontier has a plan that fits.
    for (int g : gpu_counts_up_to(n)) {
      PLANNER_TRY_ASSIGN(points, compute_frontier(context, options, all_devices(g), false));
      r.plans_evaluated += static_cast<int64_t>(points.size());
      chosen = fastest_fitting(points, limit);
      if (chosen >= 0 || g == n) {
        PLANNER_TRY_ASSIGN(points, judged(context, options, std::move(points)));
        chosen = fastest_fitting(points, limit);
      }
      used = g;
      if (chosen >= 0) break;
    }
    r.options["gpus_used"] = used;
  } else {
    // The fastest fitting plan over all devices and over the blocks of fewer (device_blocks):
    // a plan on fewer devices is one on all of them with the rest idle. Each block's frontier
    // is priced by the lowering; the blocks' fastest points are then compared on the compiled
    // step (pick_fastest), and the chosen block's frontier is judged point by point.
    std::vector<std::vector<FrontierPoint>> fronts;
    std::vector<int> blocks, best_of;
    bool fits_all = false;
    for (int g : device_blocks(n)) {
      // Nothing fits on all of them: fewer will not do better.
      if (g < n && (!fits_all || !options.fewer_devices)) break;
      PLANNER_TRY_ASSIGN(auto pts, compute_frontier(context, options, all_devices(g), false));
      r.plans_evaluated += static_cast<int64_t>(pts.size());
      int c = fastest_fitting(pts, limit);
      if (g == n) fits_all = c >= 0;
      if (c < 0 && g < n) continue;
      fronts.push_back(std::move(pts));
      blocks.push_back(g);
      best_of.push_back(c);
    }
    size_t pick = 0;
    if (fronts.size() > 1) {
      std::vector<const std::vector<analysis::OpConfig>*> candidates;
      for (size_t b = 0; b < fronts.size(); ++b)
        candidates.push_back(&fronts[b][static_cast<size_t>(best_of[b])].configs);
      PLANNER_TRY_ASSIGN(Pick p, pick_fastest(context.lowering, options, limit, candidates));
      pick = p.index;
    }
    used = blocks[pick];
    PLANNER_TRY_ASSIGN(points, judged(context, options, std::move(fronts[pick])));
    chosen = fastest_fitting(points, limit);
    if (used < n) {
      r.options["gpus_used"] = used;
      r.notes.push_back(fmt::format(
          "uses {} of the {} GPUs: this search's plans over more of them are predicted slower",
          used, n));
    }
  }
  if (chosen < 0) {
    // Nothing fits: the smallest point, which the caller reports as not fitting.
    chosen = 0;
    r.notes.push_back("no frontier plan fits the memory limit");
  } else if (options.min_gpus && used < n) {
    r.notes.push_back(fmt::format("the fewest GPUs that fit: {} of {}", used, n));
  }
  r.configs = points[static_cast<size_t>(chosen)].configs;
  for (const FrontierPoint& p : points) r.frontier.push_back(p.simulated);
  r.frontier_gpus = used;
  r.frontier_chosen = chosen;
  return r;
}

}  // namespace planner::search
