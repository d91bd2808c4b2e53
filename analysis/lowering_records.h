// A lowered plan kept as records, internal to the analysis library: per operator its compute
// tasks and outputs (a function of its config alone), per tensor the chain of its consumers'
// fetches (a function of the configs of its producer and consumers). Lowering::lower emits the
// records as a task graph; PlanSimulation re-lowers only the records one operator's new config
// touches and replaces only the groups whose records changed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/comm_model.h"
#include "analysis/lowering.h"
#include "analysis/sharding.h"
#include "analysis/task_graph.h"

namespace planner::analysis::detail {

// Resources in the order emit() adds them: per device its compute resource and its channel,
// then the collectives' sync resource.
inline ResourceId compute_resource(importers::DeviceId d) {
  return 2 * d;
}
inline ResourceId channel_resource(importers::DeviceId d) {
  return 2 * d + 1;
}
inline ResourceId sync_resource(int num_devices) {
  return 2 * num_devices;
}

/// A task of a record: its operator, the section of that operator's lowering (0: compute,
/// 1 + i: the fetches of node input i, num_inputs + 1: outputs) and its index there.
struct TaskKey {
  ir::OpId op = ir::kNoOp;  ///< kNoOp: no task (a copy resident from the start)
  int32_t section = 0;
  int32_t index = 0;
  bool operator==(const TaskKey&) const = default;
};

/// A buffer of a record, named like a task.
using BufferKey = TaskKey;

/// A buffer as a record makes it; its releasers are the reads that name it.
struct RecordBuffer {
  std::string name;
  importers::DeviceId device = 0;  ///< held by this device's compute resource
  int64_t bytes = 0;
  bool resident = false;  ///< no producer, never released
  TaskKey producer;
  bool operator==(const RecordBuffer&) const = default;
};

/// A dependency of a record: `to` waits for `from`.
struct RecordEdge {
  TaskKey from, to;
  bool operator==(const RecordEdge&) const = default;
};

/// A task that reads (and so releases) a non-resident buffer.
struct RecordRead {
  BufferKey buffer;
  TaskKey reader;
  bool operator==(const RecordRead&) const = default;
};

/// What one step of the lowering adds, in creation order. Every edge and read involves a task of
/// the section's operator.
struct Section {
  std::vector<Task> tasks;  ///< group and order are given at emission
  std::vector<RecordEdge> edges;
  std::vector<RecordBuffer> buffers;
  std::vector<RecordRead> reads;
  std::vector<double> comm_terms;   ///< bytes added to the plan's comm_bytes, in order
  std::vector<Transfer> transfers;  ///< point-to-point transfers (for link bytes)
  CommSchedule collectives;         ///< collectives' schedules (for link bytes)

  /// Whether both add the same tasks, edges, buffers and reads (what the task graph sees).
  bool same_graph(const Section& other) const;
};

/// What one shard of an operator leaves of one output.
struct RecordOutput {
  importers::DeviceId device = 0;
  Box box;               ///< the shard's box of the result
  bool whole = false;    ///< a fallback: its buffer holds the whole result, sliced to `box`
  bool partial = false;  ///< a partial sum, reduced when the tensor is first fetched
  TaskKey ready;         ///< the shard's compute task
  int32_t buffer = -1;   ///< its buffer in the outputs section (-1: updates write in place)
};

/// One operator's lowering under its config.
struct OpRecord {
  std::vector<std::vector<Box>> need;  ///< per node input, per shard: the box it reads
  Section compute;                     ///< section 0
  std::vector<Section> inputs;         ///< sections 1..n, filled by the input tensors' chains
  Section outputs;                     ///< section n + 1: output buffers and reductions
  /// Per node output: what each shard leaves, in shard order.
  std::vector<std::vector<RecordOutput>> held;
  /// Per node output: the partial sums of each tile to reduce together (indices into `held`,
  /// in partial order); empty when the output holds no partial sums.
  std::vector<std::vector<std::vector<int>>> pending;
  std::vector<Reducer> reducer;    ///< per node output: how its partial sums combine
  std::vector<Sharding> sharding;  ///< per node output

  /// Section `s` (0 .. inputs.size() + 1).
  const Section& section(int32_t s) const;
  Section& section(int32_t s);
  int32_t num_sections() const { return static_cast<int32_t>(inputs.size()) + 2; }
};

/// A whole plan as records.
struct PlanRecords {
  const Lowering* lowering = nullptr;
  std::vector<OpConfig> configs;
  std::vector<OpRecord> ops;      ///< per op
  std::vector<int32_t> position;  ///< per op: its place in topo order (= its group)
  /// Per tensor: its readers as (op, node input), in topo order then input order.
  std::vector<std::vector<std::pair<ir::OpId, int32_t>>> consumers;
  std::vector<ir::OpId> owner;              ///< per tensor: the update op keeping it, or kNoOp
  std::vector<Sharding> resident_sharding;  ///< per tensor: where a resident tensor is kept

  /// Lowers every record. Errors as Lowering::lower.
  static Expected<PlanRecords> build(const Lowering& lowering, std::vector<OpConfig> configs);
  /// The task graph and report of the records (what Lowering::lower returns).
  Expected<LoweredPlan> emit() const;
  /// One operator's record under `config` (its input sections left empty). Errors as
  /// Lowering::lower for that operator.
  Expected<OpRecord> lower_op(ir::OpId op, const OpConfig& config) const;
  /// Re-lowers the chain of tensor `t` into its consumers' input sections (and
  /// resident_sharding), from the current records of its producer or owner.
  void lower_chain(ir::TensorId t);
  /// The bytes all devices send, summed in emission order (as Lowering::lower sums them).
  double comm_bytes() const;
  /// Task::order of a task: its place in the order emit() creates tasks.
  int64_t order_of(const TaskKey& key) const {
    PLANNER_CHECK(key.section < (1 << 12) && key.index < (1 << 20),
                  "task order overflows: section {}, index {}", key.section, key.index);
    return (static_cast<int64_t>(position[static_cast<size_t>(key.op)]) << 32) |
           (static_cast<int64_t>(key.section) << 20) | key.index;
  }
};

}  // namespace planner::analysis::detail
