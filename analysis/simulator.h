// The execution simulator (FlexFlow section 5): full simulation of a task graph into a timeline,
// and a simulation state that takes a change to one part of the graph, re-simulates only the
// part of the timeline the change can move (delta simulation), and accepts or reverts it.
//
// Scheduling rule (FlexFlow's A3, made total): each resource runs its tasks one at a time in
// FIFO order of readiness. A task is ready when all its predecessors have ended; among tasks of
// one resource, the order is by ready time, then by level (the longest dependency chain from a
// source, so a task ready at the same instant as a zero-duration predecessor still comes after
// it), then by Task::order, then by task id. start = max(ready, end of the previous task on the
// resource), end = start + duration. Full and delta simulation compute exactly this schedule, bit
// for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/task_graph.h"
#include "support/expected.h"

namespace planner::analysis {

/// Totals for one resource over a simulated step.
struct ResourceUsage {
  int32_t num_tasks = 0;    ///< tasks executed
  double busy = 0.0;        ///< seconds spent executing (sum of durations, in execution order)
  double idle = 0.0;        ///< step time minus busy time
  int64_t bytes = 0;        ///< bytes moved by its tasks (links)
  int64_t peak_memory = 0;  ///< most bytes of its buffers live at one instant (devices)
};

/// The result of a simulation. Arrays are indexed by TaskId over the graph's task_capacity();
/// entries of removed (free) ids are NaN.
struct Timeline {
  std::vector<double> start;               ///< seconds from the start of the step
  std::vector<double> end;                 ///< start + duration
  double step_time = 0.0;                  ///< makespan: the latest end, 0 for an empty graph
  std::vector<ResourceUsage> resources;    ///< per resource
  std::vector<std::vector<TaskId>> order;  ///< per resource, its tasks in execution order
};

/// Simulates `graph` from scratch (FlexFlow Algorithm 1). Errors: invalid durations or sizes
/// (TaskGraph::validate), or a dependency cycle, naming a task on it.
Expected<Timeline> simulate(const TaskGraph& graph);

/// Full simulation computing only the makespan: what a search without delta simulation pays
/// per proposal. Errors as simulate().
Expected<double> simulate_step_time(const TaskGraph& graph);

/// Work done by the last Simulation::apply.
struct DeltaStats {
  int32_t resimulated = 0;  ///< tasks whose schedule was recomputed
  int32_t tasks = 0;        ///< alive tasks after the change
  int32_t moved = 0;        ///< re-simulated old tasks whose start or end changed
  double kept_until = 0.0;  ///< tasks ready before this time kept their schedule
};

/// A task graph with its simulated schedule, for a search that proposes changes and accepts or
/// rejects them (FlexFlow's MCMC). apply() re-simulates only the tasks the change can affect:
/// every task whose scheduling key is below a bound (the earliest a change can act, see
/// simulator.cpp) keeps its times, and the rest run through Algorithm 1 again from the kept
/// prefix of each resource's order. The result is identical to simulate() of the changed graph.
///
/// Usage: `auto sim = Simulation::create(graph); sim->apply(change); sim->step_time();` then
/// `sim->accept()` or `sim->revert()`, which restores graph and schedule exactly.
class Simulation {
 public:
  /// Runs a full simulation of `graph`. Errors as simulate().
  static Expected<Simulation> create(TaskGraph graph);

  /// Movable, not copyable (it owns the graph and its schedule).
  Simulation(Simulation&&) noexcept;
  Simulation& operator=(Simulation&&) noexcept;
  ~Simulation();

  /// The graph as changed by the pending change, if any.
  const TaskGraph& graph() const;
  /// The makespan of the current schedule (kept up to date by apply() and revert(): O(1)).
  double step_time() const;
  /// Start of an alive task, in seconds from the start of the step.
  double start(TaskId id) const;
  /// End of an alive task.
  double end(TaskId id) const;
  /// Peak live buffer bytes on a resource; recomputed on demand for resources a change touched.
  int64_t peak_memory(ResourceId id) const;
  /// The full timeline of the current schedule (O(tasks)).
  Timeline timeline() const;

  /// Applies `change` and updates the schedule. Requires no pending change. On an error (the
  /// change is invalid for the graph, or its edges close a dependency cycle, named in the
  /// message) nothing changes and nothing is pending. Returns the ids of the new tasks and
  /// buffers.
  Expected<NewIds> apply(const Change& change);
  /// Keeps the pending change.
  void accept();
  /// Drops the pending change: graph and schedule return to what they were before apply().
  void revert();
  /// Whether a change awaits accept() or revert().
  bool has_pending() const;
  /// What the last apply() recomputed.
  DeltaStats last_delta() const;

 private:
  struct Impl;
  explicit Simulation(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace planner::analysis
