// Chrome trace-event JSON of a simulated timeline, for Perfetto (ui.perfetto.dev) and
// chrome://tracing.
#pragma once

#include <string>

#include "analysis/simulator.h"
#include "analysis/task_graph.h"

namespace planner::analysis {

/// The timeline as a Chrome trace (JSON object format): one process per node (resources with
/// node -1 go to a process named "unplaced"), one thread (track) per resource named after it,
/// one complete ("X") event per task with ts/dur in microseconds, its name, category "compute" or
/// "comm", and args {task, group, op, bytes}. Events follow resource id, then each
/// resource's execution order, one per line: the output is deterministic and diffs well.
/// Precondition: `timeline` was simulated from `graph`.
std::string to_chrome_trace(const TaskGraph& graph, const Timeline& timeline);

}  // namespace planner::analysis
