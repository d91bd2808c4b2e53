// Cost tables for the searches that work on the group graph (dp, frontier): per group and
// candidate cut list, what its operators cost (compute, reductions of partial sums, the
// conversions between its own operators, memory); per pair of groups that exchange tensors,
// what the conversions between them cost under each pair of candidates.
//
// The costs follow the lowering's rules (lowering.h), each in isolation: an operator's time is
// its slowest shard's, a conversion's time the transfers that fetch what each consumer shard
// lacks from the nearest holder, contending for links as comm_model's step_time says. A plan's
// table cost is the sum over groups and edges: no overlap, so it ranks plans rather than
// predicting their step time (the simulator does that).
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "search/space.h"

namespace planner::search {

/// Time and memory of part of a plan.
struct Cost {
  double time = 0;    ///< seconds
  double memory = 0;  ///< bytes on the most loaded device
};

/// A point in time after which a search gives up (`--budget`).
struct Deadline {
  std::optional<std::chrono::steady_clock::time_point> at;
  bool passed() const { return at && std::chrono::steady_clock::now() > *at; }
  static Deadline after(double seconds);
};

/// What the tables' "time" measures.
enum class Objective {
  kTime,       ///< seconds: compute, reductions and conversions (the default)
  kCommBytes,  ///< bytes sent by all devices (Tofu's and SoyBean's objective); compute is free
};

/// The tables of one group graph for given candidates.
class CostTables {
 public:
  /// Two groups that exchange tensors; `cost[ca * nb + cb]` for candidates ca of `a` and cb of
  /// `b` (a < b).
  struct Edge {
    int a = 0, b = 0;
    int nb = 0;
    std::vector<double> cost;  ///< seconds
  };

  /// Builds the tables for `candidates[g]` of every group, on `devices`. Errors: a config the
  /// lowering refuses (named), or the deadline passing. `threads` workers price candidates
  /// and conversions; the tables do not depend on it.
  static Expected<CostTables> build(const GroupSpace& space,
                                    const std::vector<std::vector<CutList>>& candidates,
                                    const std::vector<int>& devices, const Deadline& deadline,
                                    Objective objective = Objective::kTime, int threads = 1);

  int num_groups() const { return static_cast<int>(node_.size()); }
  /// Per candidate of `group`: its cost.
  const std::vector<Cost>& node(int group) const { return node_[static_cast<size_t>(group)]; }
  const std::vector<Edge>& edges() const { return edges_; }

  /// The table cost of one choice per group.
  Cost total(const std::vector<int>& choice) const;

  /// Distinct conversions priced (for reports and benchmarks).
  size_t conversions_priced() const { return conversions_; }

 private:
  std::vector<std::vector<Cost>> node_;
  std::vector<Edge> edges_;
  size_t conversions_ = 0;
};

}  // namespace planner::search
