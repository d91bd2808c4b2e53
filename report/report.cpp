// The report folder: its page, its pictures and writing it all or nothing.
#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "analysis/trace.h"
#include "report/tensor_chart.h"
#include "report/timeline_chart.h"
#include "support/output_file.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::report {

namespace fs = std::filesystem;

namespace {

std::string h(std::string_view text) {
  return xml_escape(text);
}

// "1.25× faster" or "2.00× more": ours against theirs; "" when either is zero.
std::string ratio(double ours, double theirs, const char* better, const char* worse) {
  if (ours <= 0 || theirs <= 0) return "";
  double r = theirs / ours;
  if (std::fabs(r - 1.0) < 0.005) return "same";
  return r > 1 ? fmt::format("{:.2f}\u00d7 {}", r, better)
               : fmt::format("{:.2f}\u00d7 {}", 1.0 / r, worse);
}

std::string bytes(int64_t n) {
  return format_bytes(static_cast<double>(n));
}

// Per operator of the plan: what its tasks did in the simulated step.
struct OpUse {
  double gpu_time = 0;                // seconds of compute, summed over its shards
  double first = INFINITY, last = 0;  // its compute's first start and last end
  int64_t comm_bytes = 0;             // bytes its transfers and reductions moved
};

std::vector<OpUse> op_use(const ReportInputs& in) {
  std::vector<OpUse> use(in.plan->ops.size());
  for (const auto& order : in.timeline->order)
    for (analysis::TaskId t : order) {
      const analysis::Task& task = in.graph->task(t);
      if (task.op < 0 || static_cast<size_t>(task.op) >= use.size()) continue;
      OpUse& u = use[static_cast<size_t>(task.op)];
      if (task.kind == analysis::TaskKind::kComm) {
        u.comm_bytes += task.bytes;
        continue;
      }
      const double start = in.timeline->start[static_cast<size_t>(t)],
                   end = in.timeline->end[static_cast<size_t>(t)];
      u.gpu_time += end - start;
      u.first = std::min(u.first, start);
      u.last = std::max(u.last, end);
    }
  return use;
}

std::string title_of(const search::Plan& plan) {
  return fmt::format("{} on {} ({} GPUs)", plan.model.name, plan.topology.name,
                     plan.topology.num_devices);
}

std::string picture(const char* file, const std::string& alt) {
  return fmt::format("<p><a href=\"{0}\"><img src=\"{0}\" alt=\"{1}\"></a></p>\n", file, h(alt));
}

std::string page(const ReportInputs& in) {
  const search::Plan& plan = *in.plan;
  const search::PlanMetrics& p = plan.predicted;
  const auto dp_it = plan.baselines.find("data_parallel");
  const search::PlanMetrics dp =
      dp_it != plan.baselines.end() ? dp_it->second : search::PlanMetrics{};
  std::string o;
  o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += "<meta name=\"generator\" content=\"planner plan --report\">\n";
  o += fmt::format("<title>plan: {}</title>\n", h(title_of(plan)));
  o += "<style>\n"
       "body{font-family:sans-serif;margin:24px 32px;color:#222;max-width:1500px}\n"
       "h1{font-size:22px;margin-bottom:6px}\n"
       "h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}\n"
       "table{border-collapse:collapse;font-size:13px}\n"
       "th,td{padding:3px 12px 3px 0;text-align:left;vertical-align:top;border-bottom:1px solid "
       "#eee}\n"
       "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\n"
       "code{font-family:monospace;font-size:12px}\n"
       "img{max-width:100%;height:auto;border:1px solid #ddd}\n"
       ".note{color:#555;font-size:13px}\n"
       ".big td{font-size:15px;padding-right:24px}\n"
       "</style>\n</head>\n<body>\n";
  o += fmt::format("<h1>Plan: {}</h1>\n", h(title_of(plan)));

  // The header, as `planner plan` prints it (without the search's wall clock: the page is the
  // same whenever it is made).
  o += "<table>\n";
  std::string groups =
      in.num_groups > 0 ? fmt::format(" in {} groups", format_count(in.num_groups)) : "";
  o += fmt::format(
      "<tr><th>model</th><td><code>{}</code>: graph <code>{}</code>, {}, {} operators{} "
      "(sha256 <code>{}</code>)</td></tr>\n",
      h(in.model_path), h(plan.model.name), h(plan.mode),
      format_count(static_cast<int64_t>(plan.ops.size())), groups,
      h(plan.model.sha256.substr(0, 12)));
  o += fmt::format("<tr><th>topology</th><td>{} ({} GPUs, {} {})</td></tr>\n",
                   h(plan.topology.name), plan.topology.num_devices, plan.topology.num_nodes,
                   plan.topology.num_nodes == 1 ? "node" : "nodes");
  o += fmt::format("<tr><th>search</th><td>{} (seed {})</td></tr>\n", h(plan.search.algorithm),
                   plan.search.seed);
  if (in.memory_limit > 0)
    o += fmt::format("<tr><th>memory limit</th><td>{} per GPU</td></tr>\n", bytes(in.memory_limit));
  o += "</table>\n";

  o += "<h2>Predicted step</h2>\n<table class=\"big\">\n<tr><th></th><th class=\"n\">this plan</th>"
       "<th class=\"n\">data parallelism</th><th></th></tr>\n";
  o += fmt::format(
      "<tr><th>step time</th><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
      format_seconds(p.step_time_s), format_seconds(dp.step_time_s),
      ratio(p.step_time_s, dp.step_time_s, "faster", "slower"));
  o += fmt::format(
      "<tr><th>peak memory</th><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
      bytes(p.peak_memory_bytes), bytes(dp.peak_memory_bytes),
      ratio(static_cast<double>(p.peak_memory_bytes), static_cast<double>(dp.peak_memory_bytes),
            "less", "more"));
  o += fmt::format(
      "<tr><th>communication</th><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
      bytes(p.comm_bytes), bytes(dp.comm_bytes),
      ratio(static_cast<double>(p.comm_bytes), static_cast<double>(dp.comm_bytes), "less", "more"));
  o += "</table>\n";
  o += "<p class=\"note\">Peak memory is the most loaded GPU's; communication counts the bytes all "
       "GPUs send in "
       "one step.</p>\n";
  if (!in.notes.empty()) {
    o += "<ul>\n";
    for (const std::string& note : in.notes) o += fmt::format("<li>note: {}</li>\n", h(note));
    o += "</ul>\n";
  }

  o += "<h2>Memory against time</h2>\n";
  o += "<p class=\"note\">The frontier (TensorOpt): plans no other plan beats on both peak memory "
       "and step time, "
       "data parallelism (square) and this plan (diamond).</p>\n";
  o += picture("frontier.svg", "peak memory against step time");
  if (!in.frontier_note.empty())
    o += fmt::format("<p class=\"note\">{}</p>\n", h(in.frontier_note));

  o += "<h2>How the large tensors are split</h2>\n";
  o += "<p class=\"note\">Each tensor is drawn as a matrix split into its tiles, each tile in the "
       "colour of the GPU "
       "holding it (Tofu, Figure 11). Open the picture on its own for each tile's index "
       "ranges.</p>\n";
  o += picture("tensors.svg", "tiles of the largest tensors by GPU");

  o += "<h2>Simulated timeline</h2>\n";
  o += "<p class=\"note\">One step as the simulator schedules it: a lane per GPU and per "
       "communication channel. "
       "<a href=\"trace.json\">trace.json</a> holds every task as a Chrome trace (open it in "
       "ui.perfetto.dev or "
       "chrome://tracing).</p>\n";
  o += picture("timeline.svg", "simulated timeline of one step");

  // The operators with the most GPU time.
  const std::vector<OpUse> use = op_use(in);
  std::vector<size_t> order(plan.ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return use[a].gpu_time > use[b].gpu_time; });
  const size_t shown = std::min(order.size(), static_cast<size_t>(std::max(in.top_ops, 0)));
  o += "<h2>Operators</h2>\n";
  o += fmt::format(
      "<p class=\"note\">The {} of {} operators with the most GPU time (compute summed over their "
      "shards); <a href=\"plan.json\">plan.json</a> lists every operator and tensor. A "
      "configuration "
      "<code>{{m:2,n:4}}@0-7</code> splits index variable m in 2 and n in 4 over GPUs 0-7; "
      "<code>*R2</code> keeps 2 copies of each shard.</p>\n",
      shown, plan.ops.size());
  o += "<table>\n<tr><th>operator</th><th>type</th><th>phase</th><th>configuration</th><th "
       "class=\"n\">GPU "
       "time</th><th class=\"n\">span</th><th class=\"n\">communication</th></tr>\n";
  for (size_t k = 0; k < shown; ++k) {
    const size_t i = order[k];
    const search::PlanOp& op = plan.ops[i];
    const OpUse& u = use[i];
    o += fmt::format(
        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td><code>{}</code></td><td "
        "class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
        h(op.name), h(op.op_type), analysis::phase_name(op.phase), h(op.config.to_string()),
        format_seconds(u.gpu_time), u.last > u.first ? format_seconds(u.last - u.first) : "-",
        u.comm_bytes > 0 ? bytes(u.comm_bytes) : "-");
  }
  o += "</table>\n";

  o += "<h2>Files</h2>\n<ul>\n"
       "<li><a href=\"plan.json\">plan.json</a>: the plan file (docs/plan.md), for <code>planner "
       "compile</code>, "
       "<code>diff</code> and <code>explain</code></li>\n"
       "<li><a href=\"trace.json\">trace.json</a>: the simulated step as a Chrome trace</li>\n"
       "<li><a href=\"frontier.svg\">frontier.svg</a>, <a href=\"tensors.svg\">tensors.svg</a>, "
       "<a href=\"timeline.svg\">timeline.svg</a>: the pictures above</li>\n</ul>\n";
  o += "</body>\n</html>\n";
  return o;
}

}  // namespace

const std::vector<std::string>& report_file_names() {
  static const std::vector<std::string> names = {"index.html",   "frontier.svg", "tensors.svg",
                                                 "timeline.svg", "trace.json",   "plan.json"};
  return names;
}

std::vector<std::pair<std::string, std::string>> report_files(const ReportInputs& in) {
  PLANNER_CHECK(in.plan && in.graph && in.timeline,
                "report inputs without a plan, task graph or timeline");
  const search::Plan& plan = *in.plan;
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back("index.html", page(in));
  files.emplace_back("frontier.svg", search::frontier_svg(title_of(plan) + ": memory against time",
                                                          in.frontier, in.memory_limit));
  TensorChartOptions t;
  t.count = in.tensors;
  t.title = title_of(plan) + ": how the large tensors are split";
  files.emplace_back("tensors.svg", tensor_svg(plan, t));
  TimelineChartOptions tl;
  tl.title = title_of(plan) + ": one simulated " +
             (plan.mode == "train" ? "training" : "inference") + " step";
  for (const search::PlanOp& op : plan.ops) tl.op_phase.push_back(op.phase);
  files.emplace_back("timeline.svg", timeline_svg(*in.graph, *in.timeline, tl));
  files.emplace_back("trace.json", analysis::to_chrome_trace(*in.graph, *in.timeline));
  files.emplace_back("plan.json", search::plan_to_json(plan));
  return files;
}

const OutputFolderKind& report_folder_kind() {
  static const OutputFolderKind kind{"report", "", report_file_names(), false};
  return kind;
}

Expected<void> check_report_folder(const std::string& dir) {
  return check_output_folder(dir, report_folder_kind());
}

Expected<void> write_report(const std::string& dir, const ReportInputs& inputs) {
  PLANNER_TRY(check_report_folder(dir));
  // Compose everything first: a failure in a picture leaves the file system untouched.
  const auto files = report_files(inputs);
  return write_folder_atomically(dir, report_folder_kind(),
                                 [&](const fs::path& fresh) -> Expected<void> {
                                   for (const auto& [name, text] : files) {
                                     auto w = write_new_file(fresh / name, text);
                                     if (!w) return w.error().with_context(dir);
                                   }
                                   return ok();
                                 });
}

}  // namespace planner::report
