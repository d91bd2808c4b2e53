// Per-operator partition strategies for a graph: each ir::Op is matched to its TDL description,
// instantiated for its shapes and attributes, and analysed, with the results cached.
//
// Typical use (the searches call strategies() thousands of times per plan):
//
//   auto library = tdl::Library::load(user_files);        // once per run
//   analysis::StrategyCache cache(*library);
//   auto all = analysis::analyze_graph(cache, graph, "gpt2_small.onnx");  // warns per type
//   const OpStrategies* s = *cache.strategies(graph, op);  // later: a hash lookup
//   if (s->replicated) ...  else for (const Strategy& st : s->analysis->strategies) ...
//
// Identical operators (same type, domain, attributes, input and output shapes, constant inputs)
// share one analysis: a transformer's 900 operators come from a few dozen distinct ones.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/strategies.h"
#include "ir/graph.h"
#include "support/expected.h"
#include "tdl/instantiate.h"
#include "tdl/library.h"

namespace planner::analysis {

/// What the planner may do with one operator.
struct OpStrategies {
  /// The library has no description of the operator's (type, domain): it is kept whole on
  /// every worker (replicated), and instance/analysis are null.
  bool replicated = false;
  std::shared_ptr<const tdl::Instance> instance;  ///< the instantiated description
  std::shared_ptr<const OpAnalysis> analysis;     ///< its strategies (concrete regions)

  /// The number of usable strategies: valid ones (a split of an extent-1 dimension is not);
  /// 0 when replicated.
  int num_strategies() const;
};

/// Caches OpStrategies per distinct operator. Not thread-safe; one per search thread, or guard
/// it. The library must outlive the cache. Results stay valid (and at the same address) for the
/// cache's lifetime.
class StrategyCache {
 public:
  explicit StrategyCache(const tdl::Library& library) : library_(library) {}
  StrategyCache(const StrategyCache&) = delete;
  StrategyCache& operator=(const StrategyCache&) = delete;

  /// The strategies of `op` in `graph` (finalized). An operator without a description gives a
  /// `replicated` result, never an error. A described operator whose instantiation or analysis
  /// fails gives an error naming the node: "node '/h.0/attn/MatMul' (MatMul): ..."; failures
  /// are cached too, so a bad description costs one analysis per distinct operator.
  Expected<const OpStrategies*> strategies(const ir::Graph& graph, ir::OpId op);

  /// Counters, for tests and `-v` timing lines.
  struct Stats {
    int64_t lookups = 0;      ///< calls to strategies()
    int64_t hits = 0;         ///< answered from the cache (described operators)
    int64_t analyses = 0;     ///< distinct operators instantiated and analysed
    int64_t undescribed = 0;  ///< calls for operators without a description
  };
  const Stats& stats() const { return stats_; }

  /// The library the cache looks descriptions up in.
  const tdl::Library& library() const { return library_; }

 private:
  struct Entry {
    std::unique_ptr<OpStrategies> result;  // null when the analysis failed
    std::string error;                     // the failure, without the node label
  };
  const tdl::Library& library_;
  std::unordered_map<std::string, Entry> entries_;  // by request_key
  OpStrategies replicated_{.replicated = true, .instance = nullptr, .analysis = nullptr};
  Stats stats_;
};

/// The strategies of every operator of a graph.
/// Rules that come from what an operator is rather than from its description: a fused recurrent
/// operator (LSTM, GRU, RNN and their backward) is never split along its sequence `s`. Applied
/// to every analysis the cache makes (and by `planner tdl show`).
void apply_operator_rules(const ir::Op& op, OpAnalysis& analysis);

struct GraphStrategies {
  std::vector<const OpStrategies*> per_op;  ///< indexed by OpId
  /// Operator types without a description and how many operators have each, keyed by
  /// `type` or `domain.type`.
  std::map<std::string, int> undescribed;
  double milliseconds = 0;  ///< wall time of the analysis
};

/// Analyses every operator of `graph` through `cache` and logs one warning per undescribed
/// operator type (spdlog warn: "<source>: 3 operators of type 'Foo' have no TDL description:
/// kept whole (replicated)"). The first failing operator stops it, its error prefixed with
/// `source` (the model file): "gpt2_small.onnx: node '/h.0/attn/MatMul' (MatMul): ...".
Expected<GraphStrategies> analyze_graph(StrategyCache& cache, const ir::Graph& graph,
                                        const std::string& source);

}  // namespace planner::analysis
