// `planner frontier MODEL`: the memory/time frontier (TensorOpt) as a table, CSV and SVG, for
// one GPU count or profiled across several (--gpus 1,2,4,8,16).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/plan_model.h"
#include "cli/search_session.h"
#include "search/frontier.h"
#include "search/frontier_chart.h"
#include "search/plan_builder.h"
#include "support/output_file.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct FrontierFlags {
  PipelineFlags pipeline;
  SearchFlags search;
  std::vector<int> gpus;  ///< --gpus N[,M…]
  std::string csv;
  std::string svg;
};

int run_frontier(const FrontierFlags& flags) {
  std::vector<int> counts = flags.gpus;
  if (counts.empty() && flags.pipeline.topology.topology.empty()) {
    std::fprintf(stderr, "error: give --gpus N (or a list, --gpus 1,2,4,8) or --topology\n");
    return 1;
  }
  if (refuse_replicas(flags.pipeline,
                      fmt::format("frontier draws plans of all the GPUs; plan with --search "
                                  "frontier --replicas {} for the fastest frontier plan of each "
                                  "block",
                                  flags.pipeline.pinned_replicas())))
    return 1;
  if (flags.pipeline.pipeline_stages > 1) {
    std::fprintf(stderr,
                 "error: --pipeline-stages %d: frontier draws plans without pipeline stages; "
                 "plan with --search frontier --pipeline-stages %d for the fastest frontier "
                 "plan inside each stage\n",
                 flags.pipeline.pipeline_stages, flags.pipeline.pipeline_stages);
    return 1;
  }
  if (counts.empty()) counts.push_back(0);  // the whole topology
  // Before the search: no output may replace an input or a user's file.
  if (auto usable = check_outputs({{flags.csv}, {flags.svg}}, flags.pipeline.inputs()); !usable)
    return report(usable.error());
  std::vector<search::FrontierSeries> series;
  std::string csv =
      "gpus,point,step_time_s,peak_memory_bytes,comm_bytes,fits,chosen,table_time_s,"
      "table_memory_bytes,step\n";
  std::string model_name, topology_name;
  int64_t limit = 0;
  for (size_t ci = 0; ci < counts.size(); ++ci) {
    // One frontier per step variant (--recompute and --zero auto: with and without each),
    // merged: the points no other variant's point beats in both time and memory.
    struct Point {
      search::FrontierPoint point;
      std::string step;  // the variant's label ("" for the plain step)
    };
    std::vector<Point> merged;
    std::optional<search::PlanMetrics> dpm;
    int n = 0;
    PipelineFlags base = flags.pipeline;
    if (counts[ci] > 0) base.topology.gpus = counts[ci];
    const std::vector<PipelineFlags> steps = base.step_variants();
    for (const PipelineFlags& pf : steps) {
      bool dumped = false;
      auto session = open_session(pf, dumped);
      if (!session) return report(session.error());
      if (dumped) return 0;
      const PreparedModel& m = *session->model;
      if (ci == 0 && merged.empty() && !dpm) {
        auto still = check_outputs_after_import({{flags.csv}, {flags.svg}}, flags.pipeline.inputs(),
                                                m.graph, m.source);
        if (!still) return report(still.error());
      }
      const importers::Topology& topology = *m.topology;
      auto options = flags.search.options(topology);
      if (!options) return report(options.error());
      // --budget bounds the command: each step's frontier gets its share.
      options->budget_s /= static_cast<double>(steps.size());
      options->judge = [&m](const std::vector<analysis::OpConfig>& c) {
        return program_metrics(m, c);
      };
      limit = options->memory_limit;
      n = topology.num_devices();
      auto points = search::compute_frontier(session->context(), *options, search::all_devices(n));
      if (options->progress) std::fprintf(stderr, "\r\033[K");
      if (!points) return report(points.error().with_context(m.source));
      for (search::FrontierPoint& p : *points) {
        p.configs.clear();  // configs belong to this variant's graph; only figures are kept
        merged.push_back({std::move(p), pf.step_label()});
      }
      if (!dpm) {
        // Every figure shown is the compiled step's, simulated (options->judge); the tables'
        // own figures (the frontier's axes) go to the CSV beside them.
        auto dp = search::run_data_parallel(session->context(), *options);
        if (!dp) return report(dp.error().with_context(m.source));
        auto metrics = program_metrics(m, dp->configs);
        if (!metrics) return report(metrics.error());
        dpm = *metrics;
        model_name = m.graph.name.empty() ? m.source : m.graph.name;
        topology_name = topology.name();
        if (ci == 0)
          std::printf("model        %s (%s)\nmemory       %s per device\n", m.source.c_str(),
                      pf.mode.c_str(), format_bytes(static_cast<double>(limit)).c_str());
        std::printf("\n%s: %d GPUs, %d %s\n", topology.name().c_str(), n, topology.num_nodes(),
                    topology.num_nodes() == 1 ? "node" : "nodes");
      }
    }
    std::stable_sort(merged.begin(), merged.end(), [](const Point& a, const Point& b) {
      const auto &x = a.point.simulated, &y = b.point.simulated;
      return x.peak_memory_bytes != y.peak_memory_bytes ? x.peak_memory_bytes < y.peak_memory_bytes
                                                        : x.step_time_s < y.step_time_s;
    });
    // The point --search frontier picks: the fastest that fits of the first step (in
    // step_variants' order) with any point that fits, as plan takes the cheapest step that
    // fits. It stays in the table even where another step's point beats it.
    std::string chosen_step;
    double chosen_time = -1;
    for (const PipelineFlags& pf : steps) {
      for (const Point& p : merged)
        if (p.step == pf.step_label() && p.point.simulated.peak_memory_bytes <= limit &&
            (chosen_time < 0 || p.point.simulated.step_time_s < chosen_time))
          chosen_time = p.point.simulated.step_time_s;
      if (chosen_time >= 0) {
        chosen_step = pf.step_label();
        break;
      }
    }
    std::vector<Point> kept;
    int chosen = -1;
    double best_time = -1;  // the fastest point kept so far
    for (Point& p : merged) {
      const bool is_chosen = chosen < 0 && chosen_time >= 0 && p.step == chosen_step &&
                             p.point.simulated.step_time_s == chosen_time &&
                             p.point.simulated.peak_memory_bytes <= limit;
      const double t = p.point.simulated.step_time_s;
      if (!is_chosen && best_time >= 0 && t >= best_time) continue;
      if (is_chosen) chosen = static_cast<int>(kept.size());
      best_time = best_time < 0 ? t : std::min(best_time, t);
      kept.push_back(std::move(p));
    }
    const bool variants = steps.size() > 1;
    search::FrontierSeries s;
    s.gpus = n;
    s.data_parallel = *dpm;
    s.chosen = chosen;
    std::printf("  #  step time     peak memory    communication%s\n", variants ? "  step" : "");
    for (size_t i = 0; i < kept.size(); ++i) {
      const auto& p = kept[i].point.simulated;
      bool fits = p.peak_memory_bytes <= limit;
      std::string step =
          variants ? "  " + (kept[i].step.empty() ? std::string("-") : kept[i].step) : "";
      if (variants) step.resize(std::max<size_t>(step.size(), 26), ' ');
      std::string line = fmt::format(
          "{:3}  {:<12}  {:<13}  {:<13}{}{}{}", i + 1, format_seconds(p.step_time_s),
          format_bytes(static_cast<double>(p.peak_memory_bytes)),
          format_bytes(static_cast<double>(p.comm_bytes)), step,
          kept[i].point.data_parallel ? "  (data parallelism)"
          : fits                      ? ""
                                      : "  (does not fit)",
          static_cast<int>(i) == chosen ? "  <- fastest that fits (--search frontier)" : "");
      line.erase(line.find_last_not_of(' ') + 1);
      std::printf("%s\n", line.c_str());
      s.points.push_back(p);
      const search::Cost& table = kept[i].point.table;
      csv += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", n, i + 1, p.step_time_s,
                         p.peak_memory_bytes, p.comm_bytes, fits ? 1 : 0,
                         static_cast<int>(i) == chosen ? 1 : 0, table.time,
                         static_cast<int64_t>(table.memory), kept[i].step);
    }
    std::printf("  data parallel: %s, %s, %s\n", format_seconds(dpm->step_time_s).c_str(),
                format_bytes(static_cast<double>(dpm->peak_memory_bytes)).c_str(),
                format_bytes(static_cast<double>(dpm->comm_bytes)).c_str());
    csv += fmt::format("{},data_parallel,{},{},{},{},0,,,\n", n, dpm->step_time_s,
                       dpm->peak_memory_bytes, dpm->comm_bytes,
                       dpm->peak_memory_bytes <= limit ? 1 : 0);
    series.push_back(std::move(s));
  }
  if (series.size() > 1) {
    std::printf("\nGPUs  fastest that fits  smallest memory  data parallel\n");
    for (const auto& s : series) {
      std::string fastest =
          s.chosen >= 0 ? format_seconds(s.points[static_cast<size_t>(s.chosen)].step_time_s)
                        : "none fits";
      std::printf(
          "%-4d  %-17s  %-15s  %s\n", s.gpus, fastest.c_str(),
          s.points.empty()
              ? "-"
              : format_bytes(static_cast<double>(s.points.front().peak_memory_bytes)).c_str(),
          format_seconds(s.data_parallel.step_time_s).c_str());
    }
  }
  if (!flags.csv.empty()) {
    auto w = write_file_atomically(flags.csv, csv);
    if (!w) return report(w.error());
    std::printf("\nCSV written to %s\n", flags.csv.c_str());
  }
  if (!flags.svg.empty()) {
    auto w = write_file_atomically(
        flags.svg,
        search::frontier_svg(model_name + " on " + topology_name + ": memory against time", series,
                             limit));
    if (!w) return report(w.error());
    std::printf("%sSVG written to %s\n", flags.csv.empty() ? "\n" : "", flags.svg.c_str());
  }
  return 0;
}

}  // namespace

void configure_frontier(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<FrontierFlags>();
  flags->pipeline.add_to(app);
  // --gpus takes a list here: one frontier per count.
  app.remove_option(app.get_option("--gpus"));
  app.add_option("--gpus", flags->gpus,
                 "GPU count, or a comma-separated list to profile across counts")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  flags->search.add_to(app, /*with_search=*/false);
  app.add_option("--csv", flags->csv, "write the frontier points as CSV");
  app.add_option("--svg", flags->svg, "write a plot of memory against time as SVG");
  run = [flags] { return run_frontier(*flags); };
}

}  // namespace planner::cli
