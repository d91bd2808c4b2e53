// `planner compare MODEL`: every search and baseline of the search table on one model and
// topology, side by side under the simulator.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/lowering.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/pipeline.h"
#include "cli/plan_model.h"
#include "cli/replicated_plan.h"
#include "search/pipeline.h"
#include "search/plan_builder.h"
#include "search/search.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct CompareFlags {
  PipelineFlags pipeline;
  double budget_s = 10;
  uint64_t seed = 0;
  int64_t max_proposals = 0;
  bool no_timings = false;
  Format format = Format::kTable;
};

// One row: a search's plan under the simulator, or why there is none.
struct Row {
  std::string name;
  std::optional<search::PlanMetrics> metrics;
  std::string error;
  search::SearchResult result;
  double seconds = 0;  // wall clock of the search alone
};

int run_compare(const CompareFlags& flags) {
  if (refuse_replicas(flags.pipeline,
                      "compare runs every search on all the GPUs; plan each with --replicas "
                      "instead"))
    return 1;
  bool dumped = false;
  auto prepared = prepare_model(flags.pipeline, dumped);
  if (!prepared) return report(prepared.error());
  if (dumped) return 0;
  const PreparedModel& m = **prepared;
  const importers::Topology& topology = *m.topology;
  const analysis::Lowering& lowering = *m.lowering;
  const analysis::TrainingGraph* training = m.train ? &m.training : nullptr;
  auto space = search::GroupSpace::create(lowering, training);
  if (!space) return report(space.error().with_context(m.source));
  space->set_micro_batches(m.micro_batches);
  const search::SearchContext context{lowering, *space, training};

  search::SearchOptions options;
  options.seed = flags.seed;
  options.budget_s = flags.budget_s;
  options.max_proposals = flags.max_proposals;
  options.memory_limit = search::default_memory_limit(topology);
  options.virtual_stages = m.virtual_stages;
  options.judge = [&m](const std::vector<analysis::OpConfig>& c) { return program_metrics(m, c); };
  options.judge_stages = [&m](const std::vector<analysis::OpConfig>& c, int stages) {
    return program_metrics(m, c, stages);
  };
  const bool tty = isatty(fileno(stderr)) != 0;

  std::vector<Row> rows;
  for (const search::SearchInfo& info : search::searches()) {
    Row row;
    row.name = std::string(info.name);
    if (tty)
      options.progress = [&](double done, std::string_view what) {
        std::fprintf(stderr, "\r\033[K%s: %3.0f%% %.*s", row.name.c_str(), done * 100,
                     static_cast<int>(what.size()), what.data());
      };
    const auto started = std::chrono::steady_clock::now();
    // Every search inside --pipeline-stages; megatron-3d picks a stage count of its own unless
    // one is pinned.
    const search::SearchInfo* run = &info;
    if (info.name == "megatron-3d" && m.pipeline_stages > 1) {
      auto two_d = search::find_search("megatron-2d");
      if (two_d) run = *two_d;
    }
    auto result = info.name == "megatron-3d" && m.pipeline_stages == 1
                      ? info.run(context, options)
                      : search::run_pipelined(*run, context, options, m.pipeline_stages);
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (tty) std::fprintf(stderr, "\r\033[K");
    if (!result) {
      row.error = result.error().message();
    } else {
      row.result = std::move(*result);
      int stages = m.pipeline_stages;
      if (row.result.options.contains("pipeline_stages") &&
          row.result.options["pipeline_stages"].is_number_integer())
        stages = row.result.options["pipeline_stages"].get<int>();
      auto metrics = program_metrics(m, row.result.configs, stages);
      if (metrics)
        row.metrics = *metrics;
      else
        row.error = metrics.error().message();
    }
    rows.push_back(std::move(row));
  }

  const Row* dp = nullptr;
  for (const Row& r : rows)
    if (r.name == "data-parallel" && r.metrics) dp = &r;
  auto speedup = [&](const Row& r) -> std::optional<double> {
    if (!dp || !r.metrics || r.metrics->step_time_s <= 0) return std::nullopt;
    return dp->metrics->step_time_s / r.metrics->step_time_s;
  };
  auto fits = [&](const Row& r) {
    return r.metrics && r.metrics->peak_memory_bytes <= options.memory_limit;
  };

  if (flags.format == Format::kJson) {
    nlohmann::ordered_json j;
    j["model"] = m.source;
    j["topology"] = {{"name", topology.name()},
                     {"num_devices", topology.num_devices()},
                     {"num_nodes", topology.num_nodes()}};
    j["mode"] = flags.pipeline.mode;
    j["memory_limit_bytes"] = options.memory_limit;
    j["searches"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      nlohmann::ordered_json s;
      s["name"] = r.name;
      if (r.metrics) {
        s["step_time_s"] = r.metrics->step_time_s;
        s["peak_memory_bytes"] = r.metrics->peak_memory_bytes;
        s["comm_bytes"] = r.metrics->comm_bytes;
        s["fits"] = fits(r);
        if (auto x = speedup(r)) s["speedup_vs_data_parallel"] = *x;
        s["plans_evaluated"] = r.result.plans_evaluated;
        s["options"] = r.result.options;
        s["notes"] = r.result.notes;
      } else {
        s["error"] = r.error;
      }
      if (!flags.no_timings) s["search_time_s"] = r.seconds;
      j["searches"].push_back(std::move(s));
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }

  std::printf("model     %s (%s, %d operators)\n", terminal_safe(m.source).c_str(),
              flags.pipeline.mode.c_str(), m.graph.num_ops());
  std::printf("topology  %s (%d GPUs, %d nodes)\n", topology.name().c_str(), topology.num_devices(),
              topology.num_nodes());
  std::printf("memory    %s per device\n\n",
              format_bytes(static_cast<double>(options.memory_limit)).c_str());
  std::string header = fmt::format("{:<16}  {:>10}  {:>12}  {:>10}  {:>8}", "search", "step time",
                                   "peak memory", "comm", "speedup");
  if (!flags.no_timings) header += fmt::format("  {:>11}", "search time");
  std::printf("%s\n", header.c_str());
  bool any_over = false;
  for (const Row& r : rows) {
    std::string line;
    if (r.metrics) {
      auto x = speedup(r);
      const bool over = !fits(r);
      any_over |= over;
      line = fmt::format(
          "{:<16}  {:>10}  {:>12}  {:>10}  {:>8}", r.name, format_seconds(r.metrics->step_time_s),
          format_bytes(static_cast<double>(r.metrics->peak_memory_bytes)) + (over ? " !" : "  "),
          format_bytes(static_cast<double>(r.metrics->comm_bytes)),
          x ? fmt::format("{:.2f}x", *x) : std::string("-"));
      if (!flags.no_timings) line += fmt::format("  {:>11}", format_seconds(r.seconds));
    } else {
      line = fmt::format("{:<16}  failed: {}", r.name, terminal_safe(r.error));
    }
    std::printf("%s\n", line.c_str());
  }
  if (any_over) std::printf("\n! the plan does not fit device memory\n");
  bool first_note = true;
  for (const Row& r : rows)
    for (const std::string& note : r.result.notes) {
      if (first_note) std::printf("\n");
      first_note = false;
      std::printf("note: %s: %s\n", r.name.c_str(), terminal_safe(note).c_str());
    }
  return 0;
}

}  // namespace

void configure_compare(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<CompareFlags>();
  flags->pipeline.add_to(app);
  app.add_option("--budget", flags->budget_s,
                 "seconds each search may take (0: no limit; default 10)")
      ->check(budget_seconds());
  app.add_option("--seed", flags->seed, "random seed of the searches that draw (mcmc)");
  app.add_option(
         "--max-proposals", flags->max_proposals,
         "most proposals of mcmc (0: the budget alone); reached first, it makes mcmc's plan "
         "independent of the machine's speed")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-timings", flags->no_timings,
               "leave out the search times (the only output that varies between runs)");
  add_format_flag(app, flags->format);
  run = [flags] { return run_compare(*flags); };
}

}  // namespace planner::cli
