// Graph operators -> TDL descriptions -> strategies, cached per distinct operator.
#include "analysis/op_strategies.h"

#include <chrono>
#include <mutex>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "analysis/cost_model.h"
#include "analysis/instance_request.h"
#include "support/text.h"

namespace planner::analysis {

int OpStrategies::num_strategies() const {
  if (replicated || !analysis) return 0;
  int n = 0;
  for (const Strategy& s : analysis->strategies) n += s.valid ? 1 : 0;
  return n;
}

// A fused recurrent layer or its backward runs its steps one after the other: a split of the
// sequence (the variable the TDL descriptions call `s`) would make each worker wait for the one
// before it (the forward reads its own previous step, which the analysis finds by itself), or
// run the whole backward recurrence to keep its part (the backward's bodies read whole
// sequences). Either way no parallel split, so it is not offered. A split over s of a reduction
// (the weight gradients sum over time) stays.
void apply_operator_rules(const ir::Op& op, OpAnalysis& analysis) {
  if (classify(op) != OpClass::kRecurrent) return;
  for (Strategy& s : analysis.strategies)
    if (s.valid && s.var == "s" && s.kind == Strategy::Kind::kOutput) {
      s.valid = false;
      s.invalid_reason = "sequential: the recurrence runs along s";
    }
}

Expected<const OpStrategies*> StrategyCache::strategies(const ir::Graph& graph, ir::OpId id) {
  ++stats_.lookups;
  const ir::Op& op = graph.op(id);
  const tdl::OpEntry* entry = library_.find(op.op_type, op.domain);
  if (!entry) {
    ++stats_.undescribed;
    return &replicated_;
  }
  PLANNER_TRY_ASSIGN(tdl::InstanceRequest request, make_instance_request(graph, id));
  std::string key = request_key(request);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++stats_.hits;
    if (!it->second.result) return Error(node_label(op) + ": " + it->second.error);
    return it->second.result.get();
  }

  ++stats_.analyses;
  Entry fresh;
  // The instance and analysis carry the node's name in their own messages; the cached error
  // is stored without it so that a hit on another node names that node instead.
  request.node_name.clear();
  auto instance = tdl::instantiate(entry->variants, request, entry->source);
  if (instance) {
    auto analysis = analyze(*instance);
    if (analysis) apply_operator_rules(op, *analysis);
    if (analysis) {
      fresh.result = std::make_unique<OpStrategies>();
      fresh.result->instance = std::make_shared<const tdl::Instance>(std::move(*instance));
      fresh.result->analysis = std::make_shared<const OpAnalysis>(std::move(*analysis));
    } else {
      fresh.error = analysis.error().message();
    }
  } else {
    fresh.error = instance.error().message();
  }
  auto [slot, inserted] = entries_.emplace(std::move(key), std::move(fresh));
  if (!slot->second.result) return Error(node_label(op) + ": " + slot->second.error);
  return slot->second.result.get();
}

Expected<GraphStrategies> analyze_graph(StrategyCache& cache, const ir::Graph& graph,
                                        const std::string& source) {
  auto start = std::chrono::steady_clock::now();
  GraphStrategies out;
  out.per_op.resize(static_cast<size_t>(graph.num_ops()), nullptr);
  for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
    auto s = cache.strategies(graph, id);
    if (!s) return s.error().with_context(source);
    out.per_op[static_cast<size_t>(id)] = *s;
    if ((*s)->replicated) {
      const ir::Op& op = graph.op(id);
      bool default_domain = op.domain.empty() || op.domain == "ai.onnx";
      ++out.undescribed[default_domain ? op.op_type : op.domain + "." + op.op_type];
    }
  }
  // Once per model and operator type in a process: a command analyses several step variants
  // of one model (recomputation, sharded state), which would repeat the same warning.
  static std::mutex warned_mutex;
  static std::set<std::pair<std::string, std::string>> warned;
  std::lock_guard<std::mutex> lock(warned_mutex);
  for (const auto& [type, n] : out.undescribed)
    if (warned.insert({source, type}).second)
      spdlog::warn("{}{}{} operator{} of type '{}' {} no TDL description: kept whole (replicated)",
                   terminal_safe(source), source.empty() ? "" : ": ", n, n == 1 ? "" : "s",
                   terminal_safe(type), n == 1 ? "has" : "have");
  out.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace planner::analysis
