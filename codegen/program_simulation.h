// Simulating the compiled step itself: every rank's program (program.h) becomes the task graph
// the simulator runs (analysis/simulator.h), step for step, so the figures a plan reports are
// those of the program the launcher runs (docs/codegen.md, "What the compiled step costs").
//
// The model of a rank (the launcher's, docs/runtime.md):
// - Kernels run on the rank's compute stream in program order: each kernel waits for the
//   kernel before it and for the steps that wrote its inputs. A kernel of an original operator
//   is priced as the lowering prices a shard (analysis::ComputeCostModel on its input boxes,
//   the shard's share of the operator's FLOPs); a kernel that runs a whole operator on gathered
//   inputs is priced whole; the resharding kernels codegen adds (Slice, Concat, Pad, ZerosLike)
//   are memory-bound kernels moving their buffers' bytes.
// - Communication runs on the rank's communication channel, one call at a time in the order the
//   calls become ready (ties in program order). A collective waits for every member (a join)
//   and then occupies each member's channel for the collective model's time
//   (analysis::collective_cost over its group); a send occupies the sender's channel for the
//   route's latency plus bytes over bandwidth, and its recv is ready when it ends.
// - Memory: a rank's peak is its arena (memory_plan.h): every buffer at an offset fixed from
//   its lifetime in program order, persistent buffers (parameters, optimizer state, inputs,
//   constants) all step long, updated parameters and state written over their resident
//   buffers and all-reduces in place where nothing reads the old value later. The launcher
//   allocates exactly that arena. (The timeline's own per-stream memory is for traces only.)
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/comm_model.h"
#include "analysis/cost_model.h"
#include "analysis/simulator.h"
#include "analysis/task_graph.h"
#include "codegen/memory_plan.h"
#include "codegen/program.h"
#include "importers/topology.h"
#include "ir/graph.h"
#include "support/expected.h"

namespace planner::codegen {

/// The compiled step as a task graph, with where each step went.
struct ProgramTasks {
  analysis::TaskGraph graph;
  std::vector<analysis::ResourceId> compute;  ///< per rank: its compute stream (holds memory)
  std::vector<analysis::ResourceId> channel;  ///< per rank: its communication channel
  /// Per rank, per step: the task that runs it (for a collective, the member's task on its
  /// channel; for a recv, the sender's transfer task).
  std::vector<std::vector<analysis::TaskId>> step_task;
  double comm_bytes = 0;           ///< bytes sent by all ranks in one step
  std::vector<double> link_bytes;  ///< per topology link, both directions
  /// Steps that became tasks, by kind (StepKind's order): a collective or a send/recv pair
  /// counts once per rank that calls it.
  std::vector<int64_t> steps_simulated;
  /// Where every buffer lives (memory_plan.h): the ranks' peaks and the buffers written in place.
  MemoryPlan memory;
  /// GPUs that run kernels in the step (every replica's with replicas), and the factor their
  /// kernels are stretched by: the wait for the slowest of them (analysis::sync_slowdown).
  int synchronized_gpus = 1;
  double kernel_stretch = 1.0;
};

/// Builds the task graph of `programs`, compiled from `graph` for `topology` (rank r runs device
/// r). `in_order`: each kernel waits for the kernel before it on its rank, as one compute stream
/// runs them; false leaves only the data dependencies (the dataflow schedule). Errors: a
/// program whose collectives or point-to-point calls do not pair up across ranks, or more
/// ranks than the topology has devices. `with_memory` false skips the arena (memory_plan.h)
/// and the graph's buffers: the schedule alone, as order_by_schedule needs it.
Expected<ProgramTasks> program_tasks(const Programs& programs, const ir::Graph& graph,
                                     const importers::Topology& topology,
                                     const analysis::ComputeCostModel& compute,
                                     bool in_order = true, bool with_memory = true);

/// Puts each rank's steps in the order the dataflow schedule of `programs` starts them (ties in
/// program order): the compute stream then never waits on a kernel whose inputs are late while
/// later kernels could run, and the in-order step reproduces the schedule the lowering prices.
/// Every rank's order is a subsequence of one global order of start times, in which every
/// collective's members and every send and its receive meet, so the reordered programs still
/// pair up and cannot deadlock.
Expected<void> order_by_schedule(Programs& programs, const ir::Graph& graph,
                                 const importers::Topology& topology,
                                 const analysis::ComputeCostModel& compute);

/// What a collective of `programs` costs, as the simulator prices it: over `group` on
/// `topology`, or, for an all-reduce between the two replicas of Programs::replica_set, over
/// every replica's counterparts of its members on the whole cluster (then `cluster_group`, when
/// given, receives those devices). Errors: any other collective between replicas.
Expected<analysis::CollectiveCost> price_collective(const Programs& programs,
                                                    const importers::Topology& topology,
                                                    StepKind kind, const std::vector<int>& group,
                                                    double bytes,
                                                    std::vector<int>* cluster_group = nullptr);

/// What the compiled step costs under the simulator.
struct ProgramCost {
  double step_time_s = 0;                       ///< when the last rank ends
  int64_t peak_memory_bytes = 0;                ///< the most loaded rank's peak
  double comm_bytes = 0;                        ///< bytes sent by all ranks
  std::vector<double> rank_time_s;              ///< per rank: when its last step ends
  std::vector<int64_t> rank_peak_memory_bytes;  ///< per rank: its peak
  int kernels = 0;                              ///< kernel calls of all ranks
  int kernels_whole = 0;  ///< of which run a whole operator on gathered inputs
};

/// Simulates `programs` (program_tasks, then analysis::simulate). `timeline`, when given,
/// receives the schedule (for traces).
Expected<ProgramCost> simulate_programs(const Programs& programs, const ir::Graph& graph,
                                        const importers::Topology& topology,
                                        const analysis::ComputeCostModel& compute,
                                        ProgramTasks* tasks = nullptr,
                                        analysis::Timeline* timeline = nullptr);

}  // namespace planner::codegen
