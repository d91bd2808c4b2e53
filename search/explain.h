// Why a plan chose what it chose: for one operator group, every strategy it could take, what
// each would cost given the rest of the plan, and the winner's margin.
#pragma once

#include <string>
#include <vector>

#include "analysis/plan_simulation.h"
#include "search/cost_tables.h"
#include "search/search.h"
#include "search/space.h"

namespace planner::search {

/// One strategy of a group, costed with every other group as the plan has it.
struct ExplainedOption {
  CutList cuts;               ///< the group's cut list
  std::string leader_config;  ///< the leader's OpConfig in text form
  double compute_s = 0;       ///< the group's own time: compute, reductions, internal conversions
  double conversion_s = 0;    ///< conversions with the neighbouring groups
  double memory = 0;          ///< bytes on the group's most loaded device
  double step_time_s = 0;     ///< the whole plan's simulated step time with this option
  int64_t peak_memory = 0;    ///< the whole plan's largest device peak with this option
  bool chosen = false;
};

/// A group's options, fastest simulated step first (the plan's own marked).
struct Explanation {
  int group = -1;
  std::vector<ExplainedOption> options;
  std::string verdict;  ///< one or two sentences: why the chosen option won (or what beats it)
};

/// Explains `group` of a plan whose configs are `configs` on the lowering's topology.
/// Errors: the plan's configs do not lower.
Expected<Explanation> explain_group(const GroupSpace& space,
                                    const std::vector<analysis::OpConfig>& configs, int group);

}  // namespace planner::search
