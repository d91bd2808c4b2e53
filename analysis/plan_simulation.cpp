// A plan kept lowered and simulated; proposals re-lower and delta-simulate.
#include "analysis/plan_simulation.h"

#include <algorithm>
#include <optional>

#include "analysis/plan_delta.h"

namespace planner::analysis {

struct PlanSimulation::Impl {
  const Lowering* lowering = nullptr;
  std::vector<OpConfig> configs;
  std::optional<Simulation> sim;
  std::vector<ResourceId> compute;  // per device: the resource holding its memory
  double comm_bytes = 0;
  // The pending proposal.
  bool pending = false;
  std::vector<std::pair<ir::OpId, OpConfig>> old_configs;  // undone in reverse order
  double old_comm_bytes = 0;

  PlanCost cost() const {
    PlanCost c;
    c.step_time = sim->step_time();
    for (ResourceId r : compute) c.peak_memory = std::max(c.peak_memory, sim->peak_memory(r));
    c.comm_bytes = comm_bytes;
    return c;
  }
};

PlanSimulation::PlanSimulation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PlanSimulation::PlanSimulation(PlanSimulation&&) noexcept = default;
PlanSimulation& PlanSimulation::operator=(PlanSimulation&&) noexcept = default;
PlanSimulation::~PlanSimulation() = default;

Expected<PlanSimulation> PlanSimulation::create(const Lowering& lowering, std::vector<OpConfig> configs) {
  auto impl = std::make_unique<Impl>();
  impl->lowering = &lowering;
  PLANNER_TRY_ASSIGN(LoweredPlan plan, lowering.lower(configs));
  impl->configs = std::move(configs);
  impl->compute = plan.compute;
  impl->comm_bytes = plan.comm_bytes;
  PLANNER_TRY_ASSIGN(Simulation sim, Simulation::create(std::move(plan.graph)));
  impl->sim.emplace(std::move(sim));
  return PlanSimulation(std::move(impl));
}

const std::vector<OpConfig>& PlanSimulation::configs() const { return impl_->configs; }
PlanCost PlanSimulation::cost() const { return impl_->cost(); }
bool PlanSimulation::has_pending() const { return impl_->pending; }

Expected<PlanCost> PlanSimulation::propose(ir::OpId op, OpConfig config) {
  return propose({{op, std::move(config)}});
}

Expected<PlanCost> PlanSimulation::propose(const std::vector<std::pair<ir::OpId, OpConfig>>& changes) {
  Impl& m = *impl_;
  PLANNER_CHECK(!m.pending, "PlanSimulation::propose with a pending proposal");
  for (const auto& [op, config] : changes) PLANNER_TRY(m.lowering->check_config(op, config));
  std::vector<std::pair<ir::OpId, OpConfig>> old;
  old.reserve(changes.size());
  for (const auto& [op, config] : changes) {
    old.push_back({op, std::move(m.configs[static_cast<size_t>(op)])});
    m.configs[static_cast<size_t>(op)] = config;
  }
  auto restore = [&] {
    for (size_t i = old.size(); i-- > 0;) m.configs[static_cast<size_t>(old[i].first)] = std::move(old[i].second);
  };
  auto plan = m.lowering->lower(m.configs);
  if (!plan) {
    restore();
    return plan.error();
  }
  auto change = change_between(m.sim->graph(), plan->graph);
  if (!change) {
    restore();
    return change.error();
  }
  auto applied = m.sim->apply(*change);
  if (!applied) {
    restore();
    return applied.error();
  }
  m.pending = true;
  m.old_configs = std::move(old);
  m.old_comm_bytes = m.comm_bytes;
  m.comm_bytes = plan->comm_bytes;
  return m.cost();
}

void PlanSimulation::accept() {
  PLANNER_CHECK(impl_->pending, "PlanSimulation::accept without a proposal");
  impl_->sim->accept();
  impl_->old_configs.clear();
  impl_->pending = false;
}

void PlanSimulation::revert() {
  Impl& m = *impl_;
  PLANNER_CHECK(m.pending, "PlanSimulation::revert without a proposal");
  m.sim->revert();
  for (size_t i = m.old_configs.size(); i-- > 0;)
    m.configs[static_cast<size_t>(m.old_configs[i].first)] = std::move(m.old_configs[i].second);
  m.old_configs.clear();
  m.comm_bytes = m.old_comm_bytes;
  m.pending = false;
}

Expected<LoweredPlan> PlanSimulation::lowered() const { return impl_->lowering->lower(impl_->configs); }

}  // namespace planner::analysis
