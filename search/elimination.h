// Frontier tracking on the group graph (TensorOpt, section 3.2): node, edge, branch and
// heuristic elimination until every group is decided, keeping for every partial plan the cost
// frontier of (memory, time) — or, with memory untracked, the single fastest cost, which makes
// the same procedure the exact dynamic program over the graph that the recursive DP (Tofu 5.2)
// runs at each of its cuts.
//
// Branch elimination of a chain's end is TensorOpt's linear DP (LDP) step: a chain is
// eliminated from its ends inwards, so the linear DP needs no code of its own. Node
// elimination merges the new edge with a parallel one at once (edge elimination). Heuristic
// elimination decides the group with most neighbours (its cheapest candidate given each
// neighbour's best answer) when no exact elimination applies.
#pragma once

#include <vector>

#include "search/cost_tables.h"

namespace planner::search {

/// Options of eliminate().
struct EliminationOptions {
  bool track_memory = true;  ///< false: minimise time alone (one point per frontier)
  int max_points = 8;        ///< frontiers are thinned to at most this many points
  Deadline deadline;         ///< give up (an error) once passed
  int threads = 1;           ///< worker threads (the result does not depend on it)
};

/// The result: frontier points (memory ascending, time descending) and the plan of each.
struct EliminationResult {
  std::vector<Cost> costs;                ///< table cost of each frontier point
  std::vector<std::vector<int>> choices;  ///< per point: the candidate of each group
  int node_eliminations = 0;
  int branch_eliminations = 0;
  int edge_eliminations = 0;
  int heuristic_eliminations = 0;
};

/// Runs frontier tracking over `tables`. Errors only when the deadline passes.
Expected<EliminationResult> eliminate(const CostTables& tables, const EliminationOptions& options);

/// The exhaustive answer, for tests on small graphs: every combination of candidates, the
/// Pareto set of table costs (with memory untracked, the fastest). Requires few groups.
EliminationResult exhaustive(const CostTables& tables, bool track_memory);

}  // namespace planner::search
