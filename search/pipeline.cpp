// Pipeline stages: see pipeline.h.
#include "search/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
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

namespace {

// Cuts `order` (times per stage: time[k][i] is item i's time on stage k's devices) into
// `stages` contiguous runs, boundaries only after allowed items, minimising the slowest stage
// (dynamic programming over the allowed places). With `squares`, minimising the sum of the
// stages' squared times instead: runs as even as the places allow, not only the slowest one
// (virtual stages, where a stage's time is the sum of several runs). Returns the last item of
// each stage but the last.
std::vector<size_t> min_max_split(const std::vector<std::vector<double>>& time,
                                  const std::vector<char>& allowed, int stages,
                                  bool squares = false) {
  const size_t n = allowed.size();
  std::vector<size_t> ends;  // candidate ends of a stage (the last item), then the very end
  for (size_t i = 0; i + 1 < n; ++i)
    if (allowed[i]) ends.push_back(i);
  ends.push_back(n - 1);
  const size_t e = ends.size();
  auto span = [&](int k, size_t from, size_t last) {  // items (from, last] on stage k
    double t = 0;
    for (size_t i = from; i <= last; ++i) t += time[static_cast<size_t>(k)][i];
    return t;
  };
  // prefix[k][j]: time of items 0..ends[j] on stage k.
  std::vector<std::vector<double>> prefix(static_cast<size_t>(stages), std::vector<double>(e));
  for (int k = 0; k < stages; ++k)
    for (size_t j = 0; j < e; ++j)
      prefix[static_cast<size_t>(k)][j] = (j ? prefix[static_cast<size_t>(k)][j - 1] : 0.0) +
                                          span(k, j ? ends[j - 1] + 1 : 0, ends[j]);
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][j]: the slowest of stages 0..k with stage k ending at ends[j].
  std::vector<std::vector<double>> best(static_cast<size_t>(stages), std::vector<double>(e, inf));
  std::vector<std::vector<size_t>> from(static_cast<size_t>(stages), std::vector<size_t>(e, 0));
  for (size_t j = 0; j < e; ++j) best[0][j] = squares ? prefix[0][j] * prefix[0][j] : prefix[0][j];
  for (int k = 1; k < stages; ++k)
    for (size_t j = 0; j < e; ++j)
      for (size_t q = 0; q < j; ++q) {
        const auto kk = static_cast<size_t>(k);
        const double t = prefix[kk][j] - prefix[kk][q];
        const double v = squares ? best[kk - 1][q] + t * t : std::max(best[kk - 1][q], t);
        if (v < best[kk][j]) best[kk][j] = v, from[kk][j] = q;
      }
  // The fewest stages that reach the end do so where there are too few places.
  int used = stages;
  while (used > 1 && best[static_cast<size_t>(used - 1)][e - 1] == inf) --used;
  std::vector<size_t> out;
  size_t j = e - 1;
  for (int k = used - 1; k > 0; --k) {
    j = from[static_cast<size_t>(k)][j];
    out.push_back(ends[j]);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<int> balance_stages(const SearchContext& context,
                                const std::vector<analysis::OpConfig>& configs, int stages,
                                const analysis::Lowering* whole, int virtual_stages) {
  const GroupSpace& space = context.space;
  const ir::Graph& g = context.lowering.graph();
  const int groups = space.num_groups();
  std::vector<int> stage(static_cast<size_t>(groups), -1);
  auto is_forward = [&](ir::OpId op) {
    return !context.training ||
           context.training->op_phase[static_cast<size_t>(op)] == analysis::Phase::kForward;
  };
  // The forward-led groups in the order their leaders run.
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
  if (order.empty()) {
    std::fill(stage.begin(), stage.end(), 0);
    return stage;
  }
  // Each group's time (its operators' slowest shards) on each stage's devices: on the block the
  // configs are for, or, given the whole topology, on each stage's own block (a cluster that
  // mixes device types gives its faster blocks more of the model).
  const int block = context.lowering.topology().num_devices();
  std::vector<std::vector<double>> time(static_cast<size_t>(stages),
                                        std::vector<double>(order.size(), 0.0));
  std::map<int, int> stage_of_type;  // device type -> the first stage on it (times computed)
  for (int k = 0; k < stages; ++k) {
    const bool own = whole && whole->topology().num_devices() == block * stages;
    const int type = own ? whole->topology().device(k * block).type : 0;
    auto [it, fresh] = stage_of_type.try_emplace(type, k);
    if (!fresh) {
      time[static_cast<size_t>(k)] = time[static_cast<size_t>(it->second)];
      continue;
    }
    for (size_t i = 0; i < order.size(); ++i)
      for (ir::OpId m : space.members(order[i])) {
        analysis::OpConfig c = configs[static_cast<size_t>(m)];
        if (own)
          for (int& d : c.devices) d = d % block + k * block;
        auto sharded = (own ? *whole : context.lowering).shard_op(m, c);
        if (sharded && !(*sharded)->shard_time.empty())
          time[static_cast<size_t>(k)][i] +=
              *std::max_element((*sharded)->shard_time.begin(), (*sharded)->shard_time.end());
      }
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
  // Virtual stages: stages x V runs, run j on stage j % stages (its block's times).
  const int runs = stages * std::max(1, virtual_stages);
  if (runs > stages)
    for (int j = stages; j < runs; ++j) time.push_back(time[static_cast<size_t>(j % stages)]);
  if (std::count(allowed.begin(), allowed.end(), 1) < runs - 1)
    std::fill(allowed.begin(), allowed.end(), 1);
  const std::vector<size_t> boundary = min_max_split(time, allowed, runs, runs > stages);
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
    stage[static_cast<size_t>(grp)] = s >= 0 ? s : runs - 1;
  }
  return stage;
}

Expected<std::vector<int>> op_chunks(const ir::Graph& graph,
                                     const analysis::TrainingGraph* training,
                                     const std::vector<analysis::OpConfig>& configs,
                                     int num_devices, int stages, int virtual_stages) {
  std::vector<int> chunk(static_cast<size_t>(graph.num_ops()), -1);
  if (stages < 1 || num_devices % stages != 0 || configs.size() != chunk.size())
    return make_error("virtual stages: the plan is not on {} pipeline stages", stages);
  const int block = num_devices / stages;
  auto stage_of = [&](ir::OpId op) {
    const auto& d = configs[static_cast<size_t>(op)].devices;
    return d.empty() ? -1 : d.front() / block;
  };
  auto is_forward = [&](ir::OpId op) {
    return !training || training->op_phase[static_cast<size_t>(op)] == analysis::Phase::kForward;
  };
  int v = 0, previous = -1;
  for (ir::OpId op : graph.topo_order()) {
    if (!is_forward(op)) continue;
    const int s = stage_of(op);
    if (s >= 0 && previous >= 0 && s < previous) ++v;
    if (s >= 0) previous = s;
    chunk[static_cast<size_t>(op)] = v;
  }
  if (v >= virtual_stages)
    return make_error(
        "virtual stages: the plan's forward operators walk its {} stages {} times, more than the "
        "{} model chunks per stage",
        stages, v + 1, virtual_stages);
  for (ir::OpId op : graph.topo_order()) {
    if (is_forward(op)) continue;
    int c = -1;
    if (training) {
      const ir::OpId f = training->op_group[static_cast<size_t>(op)];
      if (f != ir::kNoOp && f != op && is_forward(f)) c = chunk[static_cast<size_t>(f)];
    }
    if (c < 0)
      for (ir::TensorId t : graph.op(op).inputs)
        if (t != ir::kNoTensor && graph.tensor(t).producer != ir::kNoOp)
          c = std::max(c, chunk[static_cast<size_t>(graph.tensor(t).producer)]);
    chunk[static_cast<size_t>(op)] = std::max(c, 0);
  }
  return chunk;
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
  // Each group's stage from its run (runs are stages with virtual stages).
  const int virtual_stages = std::max(1, options.virtual_stages);
  auto on_blocks = [&](std::vector<int> runs) {
    for (int& r : runs) r %= stages;
    return runs;
  };
  auto placed = [&](const std::vector<analysis::OpConfig>& configs) {
    return place_on_stages(
        context.space, configs,
        on_blocks(balance_stages(inner_context, configs, stages, &lowering, virtual_stages)),
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
  const std::vector<int> group_run =
      balance_stages(inner_context, r.configs, stages, &lowering, virtual_stages);
  const std::vector<int> group_stage = on_blocks(group_run);
  // A cluster that mixes device types: what cutting the work into equal stages would take.
  std::optional<PlanMetrics> equal;
  bool mixed = false;
  for (int k = 1; k < stages; ++k)
    mixed |= lowering.topology().device(k * block).type != lowering.topology().device(0).type;
  if (mixed && (options.judge_stages || options.judge)) {
    const auto even = place_on_stages(
        context.space, r.configs,
        on_blocks(balance_stages(inner_context, r.configs, stages, nullptr, virtual_stages)),
        block);
    auto m = options.judge_stages ? options.judge_stages(even, stages) : options.judge(even);
    if (m) equal = *m;
  }
  r.configs = place_on_stages(context.space, std::move(r.configs), group_stage, block);
  std::vector<int> forward_ops(static_cast<size_t>(stages * virtual_stages), 0);
  for (int grp = 0; grp < context.space.num_groups(); ++grp)
    if (!context.training ||
        context.training->op_phase[static_cast<size_t>(context.space.leader(grp))] ==
            analysis::Phase::kForward)
      ++forward_ops[static_cast<size_t>(group_run[static_cast<size_t>(grp)])];
  r.options["pipeline_stages"] = stages;
  if (virtual_stages > 1) r.options["virtual_stages"] = virtual_stages;
  if (equal) {
    PlanMetrics mine;
    auto m =
        options.judge_stages ? options.judge_stages(r.configs, stages) : options.judge(r.configs);
    if (m) {
      mine = *m;
      r.notes.push_back(fmt::format(
          "stages sized to their devices' speed: {:.3f} ms per step, against {:.3f} ms with the "
          "work cut into equal stages ({:.1f}% faster)",
          mine.step_time_s * 1e3, equal->step_time_s * 1e3,
          100.0 * (equal->step_time_s / mine.step_time_s - 1.0)));
    }
  }
  if (virtual_stages > 1)
    r.notes.push_back(fmt::format(
        "{} pipeline stages of {} GPUs, each holding {} model chunks (virtual stages: chunk j of "
        "the model on stage j % {}) and running this plan for its block; forward operator "
        "groups per chunk: {}",
        stages, block, virtual_stages, stages, fmt::join(forward_ops, ", ")));
  else
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
