// PlanSimulation: a plan (one OpConfig per operator) kept lowered and simulated, for a search
// that proposes one operator's new configuration at a time and keeps or drops it (FlexFlow's
// MCMC, section 6). A proposal re-lowers only what the operator's config touches (its own
// tasks and the fetches of the tensors it reads and writes), replaces the task groups that
// changed and delta-simulates them (simulator.h); the result equals lowering and simulating the
// changed plan from scratch, bit for bit.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "analysis/lowering.h"
#include "analysis/op_config.h"
#include "analysis/simulator.h"
#include "support/expected.h"

namespace planner::analysis {

/// What a plan costs under the simulator.
struct PlanCost {
  double step_time = 0;     ///< seconds per step
  int64_t peak_memory = 0;  ///< bytes, the most loaded device
  double comm_bytes = 0;    ///< bytes sent by all devices in one step
};

/// A plan with its simulated schedule, changed one operator at a time.
class PlanSimulation {
 public:
  /// Lowers and simulates `configs` (one per op of the lowering's graph). Errors as
  /// Lowering::lower and simulate().
  static Expected<PlanSimulation> create(const Lowering& lowering, std::vector<OpConfig> configs);

  PlanSimulation(PlanSimulation&&) noexcept;
  PlanSimulation& operator=(PlanSimulation&&) noexcept;
  ~PlanSimulation();

  /// The configs of the current plan (with the pending proposal, if any).
  const std::vector<OpConfig>& configs() const;
  /// The cost of the current plan (with the pending proposal, if any).
  PlanCost cost() const;
  /// Per device (topology id): its peak memory in bytes under the current plan.
  std::vector<int64_t> device_peak_memory() const;

  /// Gives `op` the config `config` and re-simulates; requires no pending proposal. On an
  /// error (the config does not fit the op, named in the message) nothing changes and nothing
  /// is pending. Returns the new cost.
  Expected<PlanCost> propose(ir::OpId op, OpConfig config);
  /// Gives every op of `changes` its config at once (a group of operators that move together)
  /// and re-simulates; requires no pending proposal. An op listed twice takes its last config.
  /// On an error nothing changes and nothing is pending. Returns the new cost.
  Expected<PlanCost> propose(const std::vector<std::pair<ir::OpId, OpConfig>>& changes);
  /// Keeps the pending proposal.
  void accept();
  /// Drops the pending proposal: configs, graph and schedule return to what they were.
  void revert();
  bool has_pending() const;

  /// The lowered plan of the current configs (lowered afresh: for reports, not for loops).
  Expected<LoweredPlan> lowered() const;

 private:
  struct Impl;
  explicit PlanSimulation(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace planner::analysis
