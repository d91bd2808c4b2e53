// Drawing a simulated timeline.
#include "report/timeline_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/svg.h"
#include "support/units.h"

namespace planner::report {

namespace {

constexpr double kMargin = 20;
constexpr double kLabelWidth = 120;  // lane names
constexpr double kShareWidth = 48;   // busy share right of the lanes
constexpr double kLaneHeight = 14;
constexpr double kLaneGap = 4;
constexpr double kTiny = 2;  // pixels: a box narrower than this merges with its neighbour

// Box colours, by class.
enum BoxClass { kForward, kBackward, kUpdate, kCompute, kComm, kRecompute, kNumClasses };
constexpr const char* kClassColour[kNumClasses] = {"#4e79a7", "#f28e2b", "#59a14f",
                                                   "#4e79a7", "#e15759", "#b07aa1"};
constexpr const char* kClassName[kNumClasses] = {"forward", "backward",      "update",
                                                 "compute", "communication", "recompute"};

BoxClass class_of(const analysis::Task& task, const std::vector<analysis::Phase>& op_phase) {
  if (task.kind == analysis::TaskKind::kComm) return kComm;
  if (task.op < 0 || static_cast<size_t>(task.op) >= op_phase.size()) return kCompute;
  switch (op_phase[static_cast<size_t>(task.op)]) {
    case analysis::Phase::kForward:
      return kForward;
    case analysis::Phase::kBackward:
      return kBackward;
    case analysis::Phase::kUpdate:
      return kUpdate;
    case analysis::Phase::kRecompute:
      return kRecompute;
  }
  return kCompute;
}

// Ticks at 1, 2 or 5 times a power of ten, about `target` of them up to `end`; the unit (s, ms,
// us) that suits `end`.
struct Axis {
  double step = 1;
  double unit = 1;
  const char* unit_name = "s";
};

Axis axis_for(double end, int target) {
  Axis a;
  if (end < 1e-3)
    a.unit = 1e-6, a.unit_name = "us";
  else if (end < 1.0)
    a.unit = 1e-3, a.unit_name = "ms";
  double raw = end / a.unit / target;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  double m = raw / p;
  a.step = (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  return a;
}

// A run of boxes drawn as one.
struct Run {
  double x0 = 0, x1 = 0;  // pixels from the lane's start
  BoxClass cls = kCompute;
  int tasks = 0;
  analysis::TaskId first = -1, last = -1;
  double start = 0, end = 0, busy = 0;  // seconds
};

std::string run_tooltip(const analysis::TaskGraph& graph, const Run& run) {
  if (run.tasks == 1)
    return fmt::format("{}: {} from {} to {}", svg_label(graph.task(run.first).name, 120),
                       format_seconds(run.busy), format_seconds(run.start),
                       format_seconds(run.end));
  return fmt::format("{} tasks, {} busy from {} to {}: {} \u2026 {}", run.tasks,
                     format_seconds(run.busy), format_seconds(run.start), format_seconds(run.end),
                     svg_label(graph.task(run.first).name, 60),
                     svg_label(graph.task(run.last).name, 60));
}

}  // namespace

std::string timeline_svg(const analysis::TaskGraph& graph, const analysis::Timeline& timeline,
                         const TimelineChartOptions& options) {
  PLANNER_CHECK(timeline.order.size() == static_cast<size_t>(graph.num_resources()),
                "timeline of {} resources for a graph of {}", timeline.order.size(),
                graph.num_resources());
  // Lanes: resources that are busy at all.
  std::vector<analysis::ResourceId> lanes;
  for (analysis::ResourceId r = 0; r < graph.num_resources(); ++r) {
    bool busy = false;
    for (analysis::TaskId t : timeline.order[static_cast<size_t>(r)])
      busy = busy || timeline.end[static_cast<size_t>(t)] > timeline.start[static_cast<size_t>(t)];
    if (busy) lanes.push_back(r);
  }
  const int omitted = std::max(0, static_cast<int>(lanes.size()) - options.max_lanes);
  if (omitted > 0) lanes.resize(static_cast<size_t>(options.max_lanes));

  const double step = timeline.step_time;
  const double span = step > 0 ? step * 1.04 : 1e-6;  // room right of the step-time mark
  const double pw = options.plot_width;
  const double px_per_s = pw / span;
  const double left = kMargin + kLabelWidth, top = 84;
  const double plot_height =
      std::max<double>(static_cast<double>(lanes.size()), 1) * (kLaneHeight + kLaneGap);
  const double width = left + pw + kShareWidth + kMargin;
  const double height = top + plot_height + 40 + (omitted > 0 ? 18 : 0);

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      num(width), num(height));
  svg += "<style>";
  for (int c = 0; c < kNumClasses; ++c) svg += fmt::format(".c{}{{fill:{}}}", c, kClassColour[c]);
  svg += "</style>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                     num(kMargin), svg_label(options.title, 140));

  // The legend: only the classes that occur.
  bool present[kNumClasses] = {};
  for (analysis::ResourceId r = 0; r < graph.num_resources(); ++r)
    for (analysis::TaskId t : timeline.order[static_cast<size_t>(r)])
      present[class_of(graph.task(t), options.op_phase)] = true;
  double lx = kMargin;
  for (int c = 0; c < kNumClasses; ++c) {
    if (!present[c]) continue;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"36\" width=\"12\" height=\"12\" class=\"c{}\"/><text x=\"{}\" "
        "y=\"46\">{}</text>\n",
        num(lx), c, num(lx + 16), kClassName[c]);
    lx += 24 + 7.0 * static_cast<double>(std::string_view(kClassName[c]).size());
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"46\" fill=\"#444\">{} tasks on {} resources; step time {}; boxes less "
      "than "
      "a pixel apart are drawn as one</text>\n",
      num(lx + 8), format_count(graph.num_tasks()), graph.num_resources(), format_seconds(step));

  // The time axis and grid.
  const Axis axis = axis_for(span, 10);
  for (int i = 0;; ++i) {
    double t = i * axis.step * axis.unit;
    if (t > span * (1 + 1e-9)) break;
    double x = left + t * px_per_s;
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e5e5e5\"/><text x=\"{0}\" "
        "y=\"{3}\" text-anchor=\"middle\" fill=\"#444\">{4:g} {5}</text>\n",
        num(x), num(top - 6), num(top + plot_height), num(top - 10), i * axis.step, axis.unit_name);
  }

  // The lanes.
  for (size_t li = 0; li < lanes.size(); ++li) {
    const analysis::ResourceId r = lanes[li];
    const double y = top + static_cast<double>(li) * (kLaneHeight + kLaneGap);
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect x=\"{}\" y=\"{}\" width=\"{}\" "
        "height=\"{}\" fill=\"#f4f4f4\"/>\n",
        num(left - 6), num(y + kLaneHeight - 3), svg_label(graph.resource(r).name, 18), num(left),
        num(y), num(step * px_per_s), num(kLaneHeight));
    std::vector<Run> runs;
    for (analysis::TaskId t : timeline.order[static_cast<size_t>(r)]) {
      const double start = timeline.start[static_cast<size_t>(t)],
                   end = timeline.end[static_cast<size_t>(t)];
      if (!(end > start)) continue;
      const BoxClass cls = class_of(graph.task(t), options.op_phase);
      const double x0 = start * px_per_s, x1 = end * px_per_s;
      // Tiny boxes join their neighbour of the same colour; boxes that can be seen stay apart.
      if (!runs.empty() && runs.back().cls == cls && x0 - runs.back().x1 < 1.0 &&
          (x1 - x0 < kTiny || runs.back().x1 - runs.back().x0 < kTiny)) {
        Run& run = runs.back();
        run.x1 = std::max(run.x1, x1);
        run.end = std::max(run.end, end);
        run.busy += end - start;
        run.last = t;
        ++run.tasks;
        continue;
      }
      runs.push_back({x0, x1, cls, 1, t, t, start, end, end - start});
    }
    for (const Run& run : runs) {
      // Half a pixel of white between boxes that touch, so that tasks stay told apart.
      const double w =
          run.x1 - run.x0 > kTiny ? run.x1 - run.x0 - 0.5 : std::max(run.x1 - run.x0, 0.5);
      svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"c{}\"",
                         num(left + run.x0), num(y), num(w), num(kLaneHeight),
                         static_cast<int>(run.cls));
      svg += w >= 3 ? fmt::format("><title>{}</title></rect>\n", run_tooltip(graph, run))
                    : std::string("/>\n");
    }
    const double busy = timeline.resources[static_cast<size_t>(r)].busy;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#444\">{:.0f}%</text>\n", num(left + pw + 6),
                       num(y + kLaneHeight - 3), step > 0 ? 100.0 * busy / step : 0.0);
  }

  // The step time.
  const double sx = left + step * px_per_s;
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#d62728\" stroke-width=\"1.5\" "
      "stroke-dasharray=\"5 3\"/><text x=\"{0}\" y=\"{3}\" text-anchor=\"end\" "
      "fill=\"#d62728\">step "
      "{4}</text>\n",
      num(sx), num(top - 4), num(top + plot_height + 4), num(top + plot_height + 18),
      format_seconds(step));
  svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#444\">busy</text>\n", num(left + pw + 6),
                     num(top - 24));
  if (omitted > 0)
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" fill=\"#444\">{} more busy resources not drawn (the trace has "
        "every "
        "task)</text>\n",
        num(kMargin), num(top + plot_height + 36), omitted);
  svg += "</svg>\n";
  return svg;
}

}  // namespace planner::report
