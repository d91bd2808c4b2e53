// Plan diff: matching operators and tensors by name, and the metric deltas.
#include "search/plan_diff.h"

#include <unordered_map>

#include <fmt/format.h>

namespace planner::search {
namespace {

MetricsChange compare(const PlanMetrics& a, const PlanMetrics& b) {
  return {{a.step_time_s, b.step_time_s},
          {static_cast<double>(a.peak_memory_bytes), static_cast<double>(b.peak_memory_bytes)},
          {static_cast<double>(a.comm_bytes), static_cast<double>(b.comm_bytes)}};
}

// The first 12 hex digits tell models apart in a message without a 64-digit wall.
std::string short_hash(const std::string& sha256) {
  return sha256.substr(0, 12);
}

// Matches `old_items` and `new_items` by name: `changed` gets pairs that differ by `same`,
// `added` the new-only items in new order, `removed` the old-only items in old order.
template <typename T, typename Change, typename Same>
void match_by_name(const std::vector<T>& old_items, const std::vector<T>& new_items, Same same,
                   std::vector<Change>& changed, std::vector<T>& added, std::vector<T>& removed) {
  std::unordered_map<std::string, const T*> old_by_name, new_by_name;
  for (const T& item : old_items) old_by_name.emplace(item.name, &item);
  for (const T& item : new_items) new_by_name.emplace(item.name, &item);
  for (const T& item : new_items) {
    auto it = old_by_name.find(item.name);
    if (it == old_by_name.end())
      added.push_back(item);
    else if (!same(*it->second, item))
      changed.push_back(Change{item.name, *it->second, item});
  }
  for (const T& item : old_items)
    if (!new_by_name.count(item.name)) removed.push_back(item);
}

}  // namespace

Expected<PlanDiff> diff_plans(const Plan& old_plan, const Plan& new_plan) {
  if (old_plan.schema_version != new_plan.schema_version)
    return make_error(
        "plans of different schema versions ({} and {}): convert both to one "
        "version before comparing them",
        old_plan.schema_version, new_plan.schema_version);
  // Another revision of the same model (its file changed, its name did not) is what CI
  // compares; plans of two different models are refused.
  if (old_plan.model.sha256 != new_plan.model.sha256 && old_plan.model.name != new_plan.model.name)
    return make_error(
        "plans of different models: '{}' (sha256 {}) and '{}' (sha256 {}); diff "
        "compares plans of one model",
        old_plan.model.name, short_hash(old_plan.model.sha256), new_plan.model.name,
        short_hash(new_plan.model.sha256));
  PlanDiff diff;
  diff.model = new_plan.model;
  diff.old_model = old_plan.model;
  diff.old_topology = old_plan.topology;
  diff.new_topology = new_plan.topology;
  diff.old_mode = old_plan.mode;
  diff.new_mode = new_plan.mode;
  diff.old_search = old_plan.search;
  diff.new_search = new_plan.search;
  diff.predicted = compare(old_plan.predicted, new_plan.predicted);
  for (const auto& [name, metrics] : old_plan.baselines) {
    auto it = new_plan.baselines.find(name);
    if (it != new_plan.baselines.end()) diff.baselines[name] = compare(metrics, it->second);
  }
  // An operator's group follows from the graph, not from the search; a change of it alone
  // is not a change of the plan a person needs to see.
  match_by_name(
      old_plan.ops, new_plan.ops,
      [](const PlanOp& a, const PlanOp& b) {
        return a.op_type == b.op_type && a.domain == b.domain && a.phase == b.phase &&
               a.config == b.config;
      },
      diff.changed_ops, diff.added_ops, diff.removed_ops);
  match_by_name(
      old_plan.tensors, new_plan.tensors,
      [](const PlanTensor& a, const PlanTensor& b) {
        return a.sharding == b.sharding && a.shape == b.shape && a.dtype == b.dtype;
      },
      diff.changed_tensors, diff.added_tensors, diff.removed_tensors);
  return diff;
}

}  // namespace planner::search
