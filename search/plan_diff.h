// Plan diff: what changed between two plans of the same model — operators whose partitioning
// or phase changed, operators added or removed, tensors laid out differently, and the change
// in predicted step time, peak memory and communication. `planner diff` prints it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/plan.h"
#include "support/expected.h"

namespace planner::search {

/// One metric in the old and the new plan.
struct MetricChange {
  double old_value = 0;  ///< the old plan's value
  double new_value = 0;  ///< the new plan's value

  /// new - old.
  double delta() const { return new_value - old_value; }
  /// (new - old) / old in percent; none when old is 0 (no base to compare with).
  std::optional<double> percent() const {
    if (old_value == 0) return std::nullopt;
    return (new_value - old_value) / old_value * 100.0;
  }
};

/// The three predicted metrics of a plan (or of a baseline) compared.
struct MetricsChange {
  MetricChange step_time_s;        ///< seconds per step
  MetricChange peak_memory_bytes;  ///< the most loaded device's peak
  MetricChange comm_bytes;         ///< bytes sent by all devices in one step
};

/// An operator present in both plans whose type, phase or configuration differs.
struct OpChange {
  std::string name;  ///< the operator (same in both plans)
  PlanOp old_op;     ///< as in the old plan
  PlanOp new_op;     ///< as in the new plan
};

/// A tensor present in both plans whose sharding or shape differs.
struct TensorChange {
  std::string name;       ///< the tensor (same in both plans)
  PlanTensor old_tensor;  ///< as in the old plan
  PlanTensor new_tensor;  ///< as in the new plan
};

/// Everything `planner diff` reports. Lists are in plan order: changed and added entries in
/// the new plan's order, removed ones in the old plan's.
struct PlanDiff {
  PlanModel model;      ///< the model (the new plan's revision of it)
  PlanModel old_model;  ///< the old plan's revision (another file hash when the model changed)
  PlanTopology old_topology;  ///< the old plan's devices
  PlanTopology new_topology;  ///< the new plan's devices (may differ: reported, not refused)
  std::string old_mode;       ///< "train" or "infer"
  std::string new_mode;       ///< "train" or "infer"
  PlanSearch old_search;      ///< how the old plan was found
  PlanSearch new_search;      ///< how the new plan was found
  MetricsChange predicted;    ///< predicted cost, old vs new
  /// Baselines present in both plans, by name.
  std::map<std::string, MetricsChange> baselines;
  std::vector<OpChange> changed_ops;          ///< in both, different
  std::vector<PlanOp> added_ops;              ///< only in the new plan
  std::vector<PlanOp> removed_ops;            ///< only in the old plan
  std::vector<TensorChange> changed_tensors;  ///< in both, different
  std::vector<PlanTensor> added_tensors;      ///< only in the new plan
  std::vector<PlanTensor> removed_tensors;    ///< only in the old plan

  /// Whether the model file changed between the plans (same name, another hash).
  bool model_changed() const { return old_model.sha256 != model.sha256; }
  /// Whether the plans were made for different topologies.
  bool topology_changed() const { return !(old_topology == new_topology); }
  /// Whether any operator or tensor differs.
  bool layout_changed() const {
    return !changed_ops.empty() || !added_ops.empty() || !removed_ops.empty() ||
           !changed_tensors.empty() || !added_tensors.empty() || !removed_tensors.empty();
  }
};

/// Compares two plans. Plans of different schema versions, or of different models (by the
/// model file's SHA-256), are refused with one line naming both versions or both models:
/// a list of changes between unrelated plans would say nothing. Plans for different
/// topologies or modes are compared.
Expected<PlanDiff> diff_plans(const Plan& old_plan, const Plan& new_plan);

}  // namespace planner::search
