// The simulated timeline of one step as a picture: a lane per resource (GPU compute streams,
// communication channels), a box per task, a time axis and the step time marked.
#pragma once

#include <string>
#include <vector>

#include "analysis/simulator.h"
#include "analysis/task_graph.h"
#include "analysis/training_graph.h"

namespace planner::report {

/// What timeline_svg draws.
struct TimelineChartOptions {
  std::string title;  ///< the heading; any bytes (escaped)
  /// Per operator (Task::op), its phase: compute boxes are coloured forward, backward or
  /// update. Empty: every compute box in one colour.
  std::vector<analysis::Phase> op_phase;
  double plot_width = 1200;  ///< pixels the step's time spans
  int max_lanes = 128;       ///< lanes drawn; the rest are counted in a note
};

/// A self-contained SVG document of `timeline`: one lane per resource that is busy at all, in
/// resource order, with its busy share; compute and communication boxes in their own colours;
/// a time axis in s, ms or us; the step time marked. To keep big models legible and the file
/// small, consecutive boxes of one colour less than a pixel apart are drawn as one box (its
/// tooltip counts the tasks), and tooltips go on boxes at least 3 pixels wide.
/// Deterministic. Precondition: `timeline` was simulated from `graph`.
std::string timeline_svg(const analysis::TaskGraph& graph, const analysis::Timeline& timeline,
                         const TimelineChartOptions& options);

}  // namespace planner::report
