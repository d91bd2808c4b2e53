// Lowering: a parallelisation plan (one OpConfig per operator) on a topology becomes the task
// graph the simulator runs (FlexFlow, section 5.1): compute tasks on GPUs, transfers and
// collectives on communication channels, and the buffers whose lifetimes give memory.
//
// The model of a step:
// - Each GPU has a compute resource and a communication channel (its NVLink/NIC engines): a
//   transfer occupies the sender's channel for latency + bytes / route bandwidth, so transfers
//   overlap compute and queue behind each other.
// - A shard of an operator reads, per input, the box its TDL description says
//   (ShardEvaluator); what its device does not hold is fetched from the nearest holder.
// - An output split along a reduction variable is a partial sum: it is all-reduced among the
//   shards holding partials of the same tile, costed by the collective model (which sees the
//   links the collective shares) and occupying every member's channel after a join.
// - Tensors nobody produces stay resident: parameters and optimizer state where their update
//   operator's shards read them (so forward and backward consumers fetch them from there),
//   model inputs and constants where each consumer reads them.
// - Buffers: outputs live from their producer's start to the end of the last task reading
//   them; fetched inputs from the transfer's start to the consumer's end; resident tensors all
//   step long.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/comm_model.h"
#include "analysis/cost_model.h"
#include "analysis/op_config.h"
#include "analysis/op_shards.h"
#include "analysis/op_strategies.h"
#include "analysis/sharding.h"
#include "analysis/task_graph.h"
#include "analysis/training_graph.h"
#include "importers/topology.h"
#include "ir/graph.h"

namespace planner::analysis {

namespace detail {
struct OpRecord;
struct PlanRecords;
}  // namespace detail

/// Options of the lowering.
struct LoweringOptions {
  ComputeCostOptions compute;               ///< the roofline's efficiencies and overheads
  const MeasuredCosts* measured = nullptr;  ///< measured kernel times (--costs), if any
  /// ZeRO stage 3 (FSDP FULL_SHARD): per op its phase; a parameter fetched by forward
  /// operators is fetched again by the first backward (or recompute) operator that reads it,
  /// its forward copies freed after their last forward reader. Null: fetched copies are kept.
  const std::vector<Phase>* regather_phases = nullptr;
};

/// A lowered plan: the task graph and what the report needs beside the timeline.
struct LoweredPlan {
  TaskGraph graph;
  std::vector<ResourceId> compute;  ///< per device: its compute resource (holds its memory)
  std::vector<ResourceId> channel;  ///< per device: its communication channel
  std::vector<GroupId> op_group;    ///< per op: the group of its tasks (compute and inputs)
  /// Per tensor: how its producer leaves it (before any reduction), or for resident tensors
  /// the layout they are kept in; empty sharding (no devices) for tensors nobody reads.
  std::vector<Sharding> tensor_sharding;
  double comm_bytes = 0;           ///< bytes sent by all devices in one step
  std::vector<double> link_bytes;  ///< per topology link, both directions
};

/// One operator under one config, shard by shard, as lower() sees it: what each shard reads,
/// writes and costs. Searches build their cost tables from this.
struct ShardedOp {
  std::vector<double> shard_time;  ///< per shard: compute seconds on its device
  /// Per node input, per shard: the box its kernel reads (op_shards.h: the whole tensor where
  /// the shard falls back to the whole operator; a box of no elements where it reads nothing;
  /// empty for an absent input).
  std::vector<std::vector<Box>> input_boxes;
  /// Per node input, per shard: the box the operator's description gives it (the structure
  /// of the split, whatever the kernel reads).
  std::vector<std::vector<Box>> described_inputs;
  /// Per node output, per shard: the box it writes (empty for an absent output).
  std::vector<std::vector<Box>> output_boxes;
  /// Per node output: the layout the shards leave it in, before partial sums are reduced
  /// (no devices for an absent output).
  std::vector<Sharding> output_sharding;
  bool native = true;  ///< every shard runs natively (else some run the whole operator)
};

/// Lowers plans of one graph on one topology. Holds per-operator region evaluators, so lowering
/// many plans of the same graph (a search) reuses them.
class Lowering {
 public:
  /// `strategies` must hold every op of `graph` (analyze_graph's result).
  Lowering(const ir::Graph& graph, const GraphStrategies& strategies,
           const importers::Topology& topology, LoweringOptions options = {});
  ~Lowering();

  /// The task graph of a plan. Errors name the operator: a config that splits a variable the
  /// operator does not have, splits an undescribed operator, or uses a device the topology
  /// lacks.
  Expected<LoweredPlan> lower(const std::vector<OpConfig>& configs) const;

  /// LoweredPlan::tensor_sharding of `configs` without lowering the step (the plan file's
  /// layouts of a plan too large to lower whole).
  /// `only` (one flag per tensor): just those tensors' layouts, the others left empty.
  Expected<std::vector<Sharding>> tensor_shardings(const std::vector<OpConfig>& configs,
                                                   const std::vector<char>* only = nullptr) const;

  /// Checks one operator's config without lowering: variables exist and are splittable, piece
  /// counts fit the extents, devices exist and are distinct.
  Expected<void> check_config(ir::OpId op, const OpConfig& config) const;

  /// The extent of each splittable index variable of an op (empty for undescribed ops).
  const std::map<std::string, int64_t>& splittable(ir::OpId op) const;

  /// Per shard of `config`, the box of node input `input` it reads (the whole tensor for
  /// undescribed operators). The config's variables must be splittable.
  Expected<std::vector<Box>> input_boxes_for(ir::OpId op, const OpConfig& config,
                                             size_t input) const;

  /// Shard-by-shard facts of `op` under `config` (see ShardedOp). Errors as check_config.
  /// Operators alike in every fact a shard depends on (type, attributes, the shapes, types and
  /// constant values of their inputs and outputs: the layers of a deep model) share one
  /// result per config, computed once (thread-safe).
  Expected<std::shared_ptr<const ShardedOp>> shard_op(ir::OpId op, const OpConfig& config) const;

  /// The class of operators alike with `op` (see shard_op), or -1 when no other is.
  int op_class(ir::OpId op) const { return op_class_[static_cast<size_t>(op)]; }

  /// `op` under `config` as the step runs it (op_shards.h): per shard its boxes, partial
  /// sums, native kernel or whole-operator fallback, what it reads, writes and computes; the
  /// layouts of the outputs. Errors as check_config, and a split of reductions with different
  /// reducers into one output.
  /// Shared between alike operators as shard_op's results are.
  Expected<std::shared_ptr<const OpShards>> op_shards(ir::OpId op, const OpConfig& config) const;

  /// The compute seconds of one shard of `op` (from op_shards) on device `device`.
  double shard_time(ir::OpId op, const ShardPlan& shard, importers::DeviceId device) const;

  /// The dimension of node output `output` that a one-variable config splits, or -1 (no split,
  /// several variables, or a variable the output does not have: a reduction or another
  /// output's).
  int output_dim_of(ir::OpId op, size_t output, const OpConfig& config) const;

  const ir::Graph& graph() const { return graph_; }
  const importers::Topology& topology() const { return topology_; }
  const GraphStrategies& strategies() const { return strategies_; }
  const LoweringOptions& options() const { return options_; }
  /// The kernel model every compute task of a plan is priced with.
  const ComputeCostModel& compute_model() const { return compute_; }

  /// What the lowering knows of one operator (internal: lowering_info.h).
  struct OpInfo;

 private:
  friend struct detail::PlanRecords;
  const OpInfo& info(ir::OpId op) const;
  /// The shard regions of an op for per-variable iteration ranges, memoised per instance.
  Expected<std::shared_ptr<const ShardRegions>> regions_of(
      const OpInfo& in, const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) const;
  Expected<OpShards> compute_op_shards(ir::OpId op, const OpConfig& config) const;
  Expected<ShardedOp> compute_shard_op(ir::OpId op, const OpConfig& config) const;
  // One operator's record (lowering_records.h) under a config, checked.
  Expected<detail::OpRecord> lower_op(ir::OpId op, const OpConfig& config) const;

  const ir::Graph& graph_;
  const GraphStrategies& strategies_;
  const importers::Topology& topology_;
  LoweringOptions options_;
  ComputeCostModel compute_;
  std::vector<std::unique_ptr<OpInfo>> info_;
  /// shard_op's memo of shard regions: (evaluator, iteration ranges) -> regions. Operators of
  /// repeated layers share evaluators, so a search prices each distinct shard once.
  mutable std::mutex region_mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<const ShardRegions>> region_cache_;
  /// Per op: its class of alike operators (op_class), and shard_op's results per
  /// (class, config).
  std::vector<int> op_class_;
  mutable std::mutex shard_mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<const ShardedOp>> shard_cache_;
  mutable std::unordered_map<std::string, std::shared_ptr<const OpShards>> op_shards_cache_;
};

/// The baselines every search is compared with (and `planner simulate --strategy`).
enum class Baseline {
  kDataParallel,   ///< every operator split along the batch over all devices
  kModelParallel,  ///< operators with parameters split along their parameters' output dimension
};

/// The configs of a baseline strategy over `num_devices` devices. The batch dimension is the
/// size that every model input has (the first such dimension of the first input): it is
/// followed through the graph by the index variables that carry it.
Expected<std::vector<OpConfig>> baseline_configs(const Lowering& lowering, Baseline baseline,
                                                 int num_devices);

}  // namespace planner::analysis
