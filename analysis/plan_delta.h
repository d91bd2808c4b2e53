// The change that turns one lowered plan's task graph into another's: the groups whose tasks or
// buffers differ are replaced, everything else stays, so delta simulation re-simulates only
// from the first task the change can move (FlexFlow section 5.3).
#pragma once

#include "analysis/task_graph.h"
#include "support/expected.h"

namespace planner::analysis {

/// The Change that makes `current` equal to `target` up to task and buffer ids. Both must come
/// from lowerings of the same graph on the same topology (same groups and resources, groups in
/// the same order); tasks are matched by group and name, which the lowering keeps unique.
Expected<Change> change_between(const TaskGraph& current, const TaskGraph& target);

}  // namespace planner::analysis
