// Pipeline stages: see pipeline.h.
#include "search/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "analysis/lowering.h"
#include "analysis/recompute.h"
#include "importers/topology.h"
#include "search/plan_builder.h"

namespace planner::search {

std::vector<int> rank_stages(int num_devices, int stages) {
  std::vector<int> out(static_cast<size_t>(std::max(num_devices, 0)), 0);
  if (stages <= 1 || num_devices % stages != 0) return out;
  const int block = num_devices / stages;
  for (int r = 0; r < num_devices; ++r) out[static_cast<size_t>(r)] = r / block;
  return out;
}

bool on_stage_blocks(const std::vector<analysis::OpConfig>& configs, int num_devices, int stages) {
  if (stages <= 1 || num_devices % stages != 0) return false;
  const int block = num_devices / stages;
  for (const analysis::OpConfig& c : configs) {
    if (c.devices.empty()) continue;
    const int stage = c.devices.front() / block;
    for (int d : c.devices)
      if (d / block != stage) return false;
  }
  return true;
}

std::vector<int> balance_stages(const SearchContext& context,
                                const std::vector<analysis::OpConfig>& configs, int stages) {
  const GroupSpace& space = context.space;
  const ir::Graph& g = context.lowering.graph();
  const int groups = space.num_groups();
  std::vector<int> stage(static_cast<size_t>(groups), -1);
  auto is_forward = [&](ir::OpId op) {
    return !context.training ||
           context.training->op_phase[static_cast<size_t>(op)] == analysis::Phase::kForward;
  };
  // The forward-led groups in the order their leaders run, each with its operators' time.
  std::vector<size_t> place(static_cast<size_t>(g.num_ops()));
  for (size_t i = 0; i < g.topo_order().size(); ++i)
    place[static_cast<size_t>(g.topo_order()[i])] = i;
  std::vector<int> order;
  for (int grp = 0; grp < groups; ++grp)
    if (is_forward(space.leader(grp))) order.push_back(grp);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return place[static_cast<size_t>(space.leader(a))] <
           place[static_cast<size_t>(space.leader(b))];
  });
  std::vector<double> time(static_cast<size_t>(groups), 0.0);
  double total = 0;
  for (int grp : order) {
    for (ir::OpId m : space.members(grp)) {
      auto sharded = context.lowering.shard_op(m, configs[static_cast<size_t>(m)]);
      if (sharded && !sharded->shard_time.empty())
        time[static_cast<size_t>(grp)] +=
            *std::max_element(sharded->shard_time.begin(), sharded->shard_time.end());
    }
    total += time[static_cast<size_t>(grp)];
  }
  // Boundaries go after forward groups where the pass has a cut whose tensor the backward
  // pass keeps (analysis/recompute.h: one activation crosses, and no later stage recomputes
  // from this one), so a stage sends one tensor forward and its gradient back, each once per
  // pass; anywhere when the pass has too few such cuts.
  std::vector<char> allowed(order.size(), 0);
  if (context.training) {
    int n = 0;
    for (analysis::Phase ph : context.training->op_phase) n += ph == analysis::Phase::kForward;
    std::vector<char> recomputed(static_cast<size_t>(g.num_tensors()), 0);
    for (ir::TensorId t : context.training->recomputes)
      if (t != ir::kNoTensor) recomputed[static_cast<size_t>(t)] = 1;
    std::vector<char> cut_after(static_cast<size_t>(n) + 1, 0);
    int found = 0;
    for (const analysis::ForwardCut& c : analysis::forward_cuts(*context.training))
      if (!recomputed[static_cast<size_t>(c.tensor)])
        cut_after[static_cast<size_t>(c.position)] = 1, ++found;
    // `order` lists the forward operators in topological order: its index is the position.
    if (found >= stages - 1 && static_cast<int>(order.size()) == n)
      for (size_t i = 0; i < order.size(); ++i) allowed[i] = cut_after[i];
  }
  if (std::find(allowed.begin(), allowed.end(), 1) == allowed.end())
    std::fill(allowed.begin(), allowed.end(), 1);
  // Each boundary at the allowed place whose time before it is nearest k / K of the total.
  std::vector<double> before(order.size(), 0);  // time up to and including group i
  double sum = 0;
  for (size_t i = 0; i < order.size(); ++i) before[i] = sum += time[static_cast<size_t>(order[i])];
  std::vector<size_t> boundary;  // the last index of each stage but the last
  size_t from = 0;
  for (int k = 1; k < stages; ++k) {
    const double target = total * k / stages;
    std::optional<size_t> best;
    for (size_t i = from; i + 1 < order.size(); ++i)
      if (allowed[i] && (!best || std::abs(before[i] - target) < std::abs(before[*best] - target)))
        best = i;
    if (!best) break;
    boundary.push_back(*best);
    from = *best + 1;
  }
  int s = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    stage[static_cast<size_t>(order[i])] = s;
    if (static_cast<size_t>(s) < boundary.size() && i == boundary[static_cast<size_t>(s)]) ++s;
  }
  // Other groups: the latest stage among the forward operators their members read from.
  for (int grp = 0; grp < groups; ++grp) {
    if (stage[static_cast<size_t>(grp)] >= 0) continue;
    int s = -1;
    for (ir::OpId m : space.members(grp))
      for (ir::TensorId t : g.op(m).inputs) {
        if (t == ir::kNoTensor) continue;
        const ir::OpId p = g.tensor(t).producer;
        if (p != ir::kNoOp && is_forward(p))
          s = std::max(s, stage[static_cast<size_t>(space.group_of(p))]);
      }
    stage[static_cast<size_t>(grp)] = s >= 0 ? s : stages - 1;
  }
  return stage;
}

std::vector<analysis::OpConfig> place_on_stages(const GroupSpace& space,
                                                std::vector<analysis::OpConfig> configs,
                                                const std::vector<int>& group_stage, int block) {
  for (int grp = 0; grp < space.num_groups(); ++grp) {
    const int offset = group_stage[static_cast<size_t>(grp)] * block;
    for (ir::OpId m : space.members(grp))
      for (int& d : configs[static_cast<size_t>(m)].devices) d = d % block + offset;
  }
  return configs;
}

Expected<SearchResult> run_pipelined(const SearchInfo& info, const SearchContext& context,
                                     const SearchOptions& options, int stages) {
  const analysis::Lowering& lowering = context.lowering;
  const int n = lowering.topology().num_devices();
  if (stages < 1 || n % stages != 0)
    return make_error("--pipeline-stages {}: the stages must divide the {} GPUs", stages, n);
  if (stages == 1) return info.run(context, options);
  const int block = n / stages;
  PLANNER_TRY_ASSIGN(importers::Topology sub, importers::first_devices(lowering.topology(), block));
  const analysis::Lowering inner(lowering.graph(), lowering.strategies(), sub, lowering.options());
  PLANNER_TRY_ASSIGN(GroupSpace space,
                     GroupSpace::create(inner, context.training, context.space.shard_state()));
  space.set_micro_batches(context.space.micro_batches());
  const SearchContext inner_context{inner, space, context.training};
  auto placed = [&](const std::vector<analysis::OpConfig>& configs) {
    return place_on_stages(context.space, configs, balance_stages(inner_context, configs, stages),
                           block);
  };
  SearchOptions o = options;
  if (options.judge_stages)
    o.judge = [&](const std::vector<analysis::OpConfig>& configs) {
      return options.judge_stages(placed(configs), stages);
    };
  else if (options.judge)
    o.judge = [&](const std::vector<analysis::OpConfig>& configs) {
      return options.judge(placed(configs));
    };
  PLANNER_TRY_ASSIGN(SearchResult r, info.run(inner_context, o));
  const std::vector<int> group_stage = balance_stages(inner_context, r.configs, stages);
  r.configs = place_on_stages(context.space, std::move(r.configs), group_stage, block);
  std::vector<int> forward_ops(static_cast<size_t>(stages), 0);
  for (int grp = 0; grp < context.space.num_groups(); ++grp)
    if (!context.training ||
        context.training->op_phase[static_cast<size_t>(context.space.leader(grp))] ==
            analysis::Phase::kForward)
      ++forward_ops[static_cast<size_t>(group_stage[static_cast<size_t>(grp)])];
  r.options["pipeline_stages"] = stages;
  r.notes.push_back(fmt::format(
      "{} pipeline stages of {} GPUs, each running this plan for its block; forward operator "
      "groups per stage: {}",
      stages, block, fmt::join(forward_ops, ", ")));
  return r;
}

Expected<SearchResult> run_megatron_3d(const SearchContext& context, const SearchOptions& options) {
  const int n = context.lowering.topology().num_devices();
  PLANNER_TRY_ASSIGN(const SearchInfo* two_d, find_search("megatron-2d"));
  const int64_t limit = options.memory_limit > 0
                            ? options.memory_limit
                            : default_memory_limit(context.lowering.topology());
  std::optional<SearchResult> best;
  std::optional<PlanMetrics> best_m;
  std::vector<std::string> tried;
  int64_t evaluated = 0;
  for (int k = 1; k <= std::min(n, 16); k *= 2) {
    if (n % k != 0 || (k > 1 && !context.training)) continue;
    PLANNER_TRY_ASSIGN(SearchResult r, run_pipelined(*two_d, context, options, k));
    evaluated += r.plans_evaluated;
    PlanMetrics m;
    if (options.judge_stages) {
      PLANNER_TRY_ASSIGN(m, options.judge_stages(r.configs, k));
    } else {
      PLANNER_TRY_ASSIGN(m, judge_configs(context.lowering, options, r.configs));
    }
    tried.push_back(fmt::format("{} {:.3f}", k, m.step_time_s * 1e3));
    const bool fits = m.peak_memory_bytes <= limit;
    const bool best_fits = best_m && best_m->peak_memory_bytes <= limit;
    if (!best_m || (fits && !best_fits) ||
        (fits == best_fits && (fits ? m.step_time_s < best_m->step_time_s
                                    : m.peak_memory_bytes < best_m->peak_memory_bytes))) {
      r.options["pipeline_stages"] = k;
      best = std::move(r);
      best_m = m;
    }
  }
  if (!best) return make_error("megatron-3d: no stage count divides the {} GPUs", n);
  best->notes.insert(
      best->notes.begin(),
      fmt::format("pipeline stages tried (step ms): {}; kept {}", fmt::join(tried, ", "),
                  best->options["pipeline_stages"].get<int>()));
  best->plans_evaluated = evaluated;
  return std::move(*best);
}

}  // namespace planner::search
