// Drawing the frontier.
#include "search/frontier_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "support/text.h"
#include "support/units.h"

namespace planner::search {

namespace {

std::string escape(const std::string& s) {
  return xml_escape(s);
}

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                          "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

}  // namespace

std::string frontier_svg(const std::string& title, const std::vector<FrontierSeries>& series,
                         int64_t memory_limit) {
  const double W = 760, H = 480, left = 90, right = 210, top = 50, bottom = 60;
  double xmax = 0, ymax = 0;
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      xmax = std::max(xmax, static_cast<double>(p.peak_memory_bytes));
      ymax = std::max(ymax, p.step_time_s);
    }
    xmax = std::max(xmax, static_cast<double>(s.data_parallel.peak_memory_bytes));
    ymax = std::max(ymax, s.data_parallel.step_time_s);
    if (s.plan) {
      xmax = std::max(xmax, static_cast<double>(s.plan->peak_memory_bytes));
      ymax = std::max(ymax, s.plan->step_time_s);
    }
  }
  if (xmax <= 0) xmax = 1;
  if (ymax <= 0) ymax = 1;
  xmax *= 1.08;
  ymax *= 1.08;
  const double pw = W - left - right, ph = H - top - bottom;
  auto X = [&](double bytes) { return left + pw * bytes / xmax; };
  auto Y = [&](double seconds) { return top + ph - ph * seconds / ymax; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      W, H);
  svg += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                     left, escape(title));
  // Axes and ticks.
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", left,
                     top + ph, left + pw);
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left,
                     top, top + ph);
  for (int i = 0; i <= 4; ++i) {
    double bx = xmax * i / 4, ty = ymax * i / 4;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", X(bx),
                       top + ph + 18, escape(format_bytes(bx)));
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6,
                       Y(ty) + 4, escape(format_seconds(ty)));
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>\n",
        left, Y(ty), left + pw);
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">peak memory per device</text>\n",
      left + pw / 2, H - 16);
  svg += fmt::format(
      "<text x=\"18\" y=\"{:.1f}\" transform=\"rotate(-90 18 {:.1f})\" text-anchor=\"middle\">step "
      "time</text>\n",
      top + ph / 2, top + ph / 2);
  if (memory_limit > 0 && static_cast<double>(memory_limit) < xmax)
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#999\" "
        "stroke-dasharray=\"4 3\"/><text x=\"{0:.1f}\" y=\"{3}\" fill=\"#666\">memory "
        "limit</text>\n",
        X(static_cast<double>(memory_limit)), top, top + ph, top - 4);
  // Series.
  double ly = top + 10;
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    const char* colour = kColours[i % 8];
    std::string path;
    for (const auto& p : s.points)
      path += fmt::format("{:.1f},{:.1f} ", X(static_cast<double>(p.peak_memory_bytes)),
                          Y(p.step_time_s));
    if (!path.empty())
      svg += fmt::format(
          "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>\n", path,
          colour);
    for (size_t k = 0; k < s.points.size(); ++k) {
      const auto& p = s.points[k];
      bool chosen = static_cast<int>(k) == s.chosen;
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"><title>{} GPUs: {}, "
          "{}</title></circle>\n",
          X(static_cast<double>(p.peak_memory_bytes)), Y(p.step_time_s), chosen ? 7 : 4,
          chosen ? "none\" stroke=\"black\" stroke-width=\"2" : colour, s.gpus,
          escape(format_seconds(p.step_time_s)),
          escape(format_bytes(static_cast<double>(p.peak_memory_bytes))));
    }
    // Data parallelism: a square.
    double dx = X(static_cast<double>(s.data_parallel.peak_memory_bytes)),
           dy = Y(s.data_parallel.step_time_s);
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\"><title>data parallel, {} GPUs</title></rect>\n",
        dx - 5, dy - 5, colour, s.gpus);
    if (s.plan) {
      // The reported plan: a diamond, drawn last so it stays visible over a frontier point.
      double px = X(static_cast<double>(s.plan->peak_memory_bytes)), py = Y(s.plan->step_time_s);
      svg += fmt::format(
          "<polygon points=\"{0:.1f},{1:.1f} {2:.1f},{3:.1f} {0:.1f},{4:.1f} {5:.1f},{3:.1f}\" "
          "fill=\"{6}\" stroke=\"black\" stroke-width=\"1.5\"><title>this plan, {7} GPUs: {8}, "
          "{9}</title></polygon>\n",
          px, py - 8, px + 8, py, py + 8, px - 8, colour, s.gpus,
          escape(format_seconds(s.plan->step_time_s)),
          escape(format_bytes(static_cast<double>(s.plan->peak_memory_bytes))));
    }
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">{} "
        "GPUs</text>\n",
        left + pw + 20, ly, colour, left + pw + 30, ly + 4, s.gpus);
    ly += 18;
  }
  svg += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"black\" "
      "stroke-width=\"2\"/><text x=\"{:.1f}\" y=\"{:.1f}\">data parallel</text>\n",
      left + pw + 15, ly - 5, left + pw + 30, ly + 4);
  ly += 18;
  svg += fmt::format(
      "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"7\" fill=\"none\" stroke=\"black\" "
      "stroke-width=\"2\"/>"
      "<text x=\"{:.1f}\" y=\"{:.1f}\">chosen (fastest that fits)</text>\n",
      left + pw + 20, ly, left + pw + 30, ly + 4);
  if (std::any_of(series.begin(), series.end(),
                  [](const FrontierSeries& s) { return s.plan.has_value(); })) {
    ly += 18;
    svg += fmt::format(
        "<polygon points=\"{0:.1f},{1:.1f} {2:.1f},{3:.1f} {0:.1f},{4:.1f} {5:.1f},{3:.1f}\" "
        "fill=\"white\" stroke=\"black\" stroke-width=\"1.5\"/><text x=\"{6:.1f}\" y=\"{7:.1f}\">"
        "this plan</text>\n",
        left + pw + 20, ly - 7, left + pw + 27, ly, ly + 7, left + pw + 13, left + pw + 30, ly + 4);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace planner::search
