// From configs to a Plan.
#include "search/plan_builder.h"

#include <optional>

#include <algorithm>

#include "analysis/simulator.h"

namespace planner::search {

namespace {

Expected<PlanMetrics> metrics_of(const analysis::LoweredPlan& lowered) {
  PLANNER_TRY_ASSIGN(analysis::Timeline timeline, analysis::simulate(lowered.graph));
  PlanMetrics m;
  m.step_time_s = timeline.step_time;
  for (analysis::ResourceId r : lowered.compute)
    m.peak_memory_bytes =
        std::max(m.peak_memory_bytes, timeline.resources[static_cast<size_t>(r)].peak_memory);
  m.comm_bytes = static_cast<int64_t>(lowered.comm_bytes + 0.5);
  return m;
}

}  // namespace

Expected<PlanMetrics> evaluate_configs(const analysis::Lowering& lowering,
                                       const std::vector<analysis::OpConfig>& configs) {
  PLANNER_TRY_ASSIGN(analysis::LoweredPlan lowered, lowering.lower(configs));
  return metrics_of(lowered);
}

Expected<PlanMetrics> judge_configs(const analysis::Lowering& lowering,
                                    const SearchOptions& options,
                                    const std::vector<analysis::OpConfig>& configs) {
  if (options.judge) return options.judge(configs);
  return evaluate_configs(lowering, configs);
}

Expected<Pick> pick_fastest(const analysis::Lowering& lowering, const SearchOptions& options,
                            int64_t limit,
                            const std::vector<const std::vector<analysis::OpConfig>*>& candidates) {
  PLANNER_CHECK(!candidates.empty(), "pick_fastest without candidates");
  std::vector<PlanMetrics> lowered;
  bool any_fits = false;
  for (const auto* c : candidates) {
    PLANNER_TRY_ASSIGN(PlanMetrics m, evaluate_configs(lowering, *c));
    any_fits = any_fits || m.peak_memory_bytes <= limit;
    lowered.push_back(m);
  }
  // The screen: the best lowered figure among the candidates that count.
  double best_time = 0, best_memory = 0;
  bool first = true;
  for (const PlanMetrics& m : lowered) {
    if (any_fits && m.peak_memory_bytes > limit) continue;
    if (first || m.step_time_s < best_time) best_time = m.step_time_s;
    if (first || static_cast<double>(m.peak_memory_bytes) < best_memory)
      best_memory = static_cast<double>(m.peak_memory_bytes);
    first = false;
  }
  std::optional<Pick> best;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const PlanMetrics& m = lowered[i];
    if (any_fits ? (m.peak_memory_bytes > limit || m.step_time_s > best_time * (1 + kScreenMargin))
                 : static_cast<double>(m.peak_memory_bytes) > best_memory * (1 + kScreenMargin))
      continue;
    PLANNER_TRY_ASSIGN(PlanMetrics judged, judge_configs(lowering, options, *candidates[i]));
    const bool fits = judged.peak_memory_bytes <= limit;
    if (!best) {
      best = Pick{i, judged};
      continue;
    }
    const bool best_fits = best->metrics.peak_memory_bytes <= limit;
    if ((fits && !best_fits) ||
        (fits == best_fits && (fits ? judged.step_time_s < best->metrics.step_time_s
                                    : judged.peak_memory_bytes < best->metrics.peak_memory_bytes)))
      best = Pick{i, judged};
  }
  return *best;
}

Expected<Plan> build_plan(const analysis::Lowering& lowering,
                          const std::vector<analysis::OpConfig>& configs,
                          const analysis::TrainingGraph* training, PlanHeader header,
                          std::map<std::string, PlanMetrics> baselines,
                          std::optional<std::vector<analysis::Sharding>> layouts) {
  PlanMetrics predicted;
  if (!layouts) {
    PLANNER_TRY_ASSIGN(analysis::LoweredPlan lowered, lowering.lower(configs));
    PLANNER_TRY_ASSIGN(predicted, metrics_of(lowered));
    layouts = std::move(lowered.tensor_sharding);
  }
  if (layouts->size() != static_cast<size_t>(lowering.graph().num_tensors()))
    return make_error("{} layouts for {} tensors", layouts->size(), lowering.graph().num_tensors());
  const ir::Graph& g = lowering.graph();
  const importers::Topology& topology = lowering.topology();
  Plan plan;
  plan.model = std::move(header.model);
  plan.topology = {topology.name(), topology.num_devices(), topology.num_nodes()};
  plan.mode = std::move(header.mode);
  plan.search = std::move(header.search);
  plan.predicted = predicted;
  plan.baselines = std::move(baselines);
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    const ir::Op& op = g.op(id);
    PlanOp p;
    p.name = op.name;
    p.op_type = op.op_type;
    p.domain = op.domain;
    if (training) {
      p.phase = training->op_phase[static_cast<size_t>(id)];
      ir::OpId fwd = training->op_group[static_cast<size_t>(id)];
      if (fwd != ir::kNoOp && fwd != id) p.group = g.op(fwd).name;
    }
    p.config = configs[static_cast<size_t>(id)];
    plan.ops.push_back(std::move(p));
  }
  for (ir::TensorId id = 0; id < g.num_tensors(); ++id) {
    const ir::Tensor& t = g.tensor(id);
    PlanTensor p;
    p.name = t.name;
    p.dtype = t.dtype;
    p.shape = t.shape;
    p.role = t.role;
    p.sharding = std::move((*layouts)[static_cast<size_t>(id)]);
    // A tensor no operator reads or writes is kept whole where the step starts: device 0.
    if (p.sharding.devices.empty()) p.sharding = analysis::Sharding::replicated(t.rank(), {0});
    plan.tensors.push_back(std::move(p));
  }
  PLANNER_TRY(validate_plan(plan));
  return plan;
}

}  // namespace planner::search
