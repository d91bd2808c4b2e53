// `planner plan MODEL`: search for a plan, write the plan file, print a ten-second summary.
#include <cmath>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "analysis/simulator.h"
#include "analysis/trace.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/plan_model.h"
#include "cli/search_session.h"
#include "cli/step_sizing.h"
#include "report/report.h"
#include "search/frontier.h"
#include "search/plan_builder.h"
#include "support/output_file.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct PlanFlags {
  PipelineFlags pipeline;
  SearchFlags search;
  std::string output = "plan.json";
  std::string trace;
  std::string report;  ///< --report DIR
  Format format = Format::kTable;
};

std::string ratio(double ours, double theirs, const char* better, const char* worse) {
  if (ours <= 0 || theirs <= 0) return "";
  double r = theirs / ours;
  if (std::fabs(r - 1.0) < 0.005) return "(same)";
  return r > 1 ? fmt::format("({:.2f}x {})", r, better)
               : fmt::format("({:.2f}x {})", 1.0 / r, worse);
}

// The GPU count that would hold `peak` bytes per device at `limit`, scaling from `n` devices
// (memory per device falls about linearly with more devices): a power of two.
int gpus_to_fit(int64_t peak, int64_t limit, int n) {
  double need = static_cast<double>(n) * static_cast<double>(peak) / static_cast<double>(limit);
  int g = 1;
  while (g < need) g *= 2;
  return std::max(g, n * 2);
}

// For a training step that does not fit on these GPUs: the pipeline stages that would leave
// each GPU at most half its memory of parameters and optimizer state, and the micro-batches
// that would shrink the rest (activations, about in proportion) to four tenths of it; "" when
// neither applies (the step is not training, already pinned there, or its batch cannot be
// divided).
std::string training_hint(const PreparedModel& m, int64_t peak, int64_t limit) {
  if (!m.train || m.micro_batch <= 0) return "";
  const int n = m.topology->num_devices();
  const double state = static_cast<double>(replicated_state_bytes(m.graph));
  const double rest = std::max(0.0, static_cast<double>(peak) - state);
  int k = std::max(1, m.pipeline_stages);
  while (k * 2 <= n && state / k > 0.5 * static_cast<double>(limit)) k *= 2;
  // The state alone outgrows every GPU even spread over all of them: only more GPUs help.
  if (state / k > 0.5 * static_cast<double>(limit)) return "";
  const int64_t batch = m.micro_batch * m.micro_batches;
  int mb = std::max(1, m.micro_batches);
  while (batch % (static_cast<int64_t>(mb) * 2) == 0 &&
         (rest / mb > 0.4 * static_cast<double>(limit) || (k > 1 && mb < 2 * k)))
    mb *= 2;
  std::string hint;
  if (k > std::max(1, m.pipeline_stages)) hint += fmt::format(" --pipeline-stages {}", k);
  if (mb > m.micro_batches) hint += fmt::format(" --micro-batches {}", mb);
  if (hint.empty()) return "";
  return "; on these GPUs, a step of" + hint + " (or --search megatron-3d, which picks its own)";
}

// The report folder: the plan, its simulated step, and the frontier with data parallelism and
// the plan marked. The frontier search's own frontier is reused; for the other searches it is
// computed as `planner frontier` does, within --budget. A frontier that cannot be computed
// leaves the picture with data parallelism and the plan, and the page says why.
Expected<void> write_report_folder(const PlanFlags& flags, const SearchSession& session,
                                   const PlanOutcome& outcome, const analysis::TaskGraph& graph,
                                   const analysis::Timeline& timeline) {
  const PreparedModel& m = *session.model;
  const search::Plan& plan = outcome.plan;
  report::ReportInputs in;
  in.plan = &plan;
  in.graph = &graph;
  in.timeline = &timeline;
  in.model_path = m.source;
  in.num_groups = session.context().space.num_groups();
  in.notes = outcome.notes;
  in.memory_limit = outcome.memory_limit;

  search::FrontierSeries series;
  series.gpus = m.topology->num_devices();
  series.data_parallel = plan.baselines.at("data_parallel");
  series.plan = plan.predicted;
  if (!outcome.frontier.empty()) {
    series.points = outcome.frontier;
    series.chosen = outcome.frontier_chosen;
    if (outcome.frontier_gpus != series.gpus)
      in.frontier_note = fmt::format(
          "The frontier is the one on the {} GPUs the plan uses; data parallelism is on "
          "all {}.",
          outcome.frontier_gpus, series.gpus);
  } else {
    PLANNER_TRY_ASSIGN(search::SearchOptions options, flags.search.options(*m.topology));
    const ReplicaModels* rep = session.replicas.get();
    options.judge = [&m, rep](const std::vector<analysis::OpConfig>& c) {
      return rep ? program_metrics(*rep->two, rep->replicate(c, 2, 1), 1) : program_metrics(m, c);
    };
    if (options.progress) options.progress(0.0, "the report's frontier");
    auto points = search::compute_frontier(session.context(), options,
                                           search::all_devices(rep ? rep->block : series.gpus));
    if (options.progress) std::fprintf(stderr, "\r\033[K");
    if (points && rep)
      in.frontier_note = fmt::format(
          "The frontier's points are plans for one replica's {} GPUs, repeated {} times over the "
          "batch, as this plan is.",
          rep->block, rep->replicas);
    if (points) {
      for (const search::FrontierPoint& p : *points) series.points.push_back(p.simulated);
      series.chosen = search::fastest_fitting(*points, outcome.memory_limit);
    } else {
      in.frontier_note =
          "The frontier is not drawn: " + points.error().message() + " (see --budget).";
    }
  }
  in.frontier.push_back(std::move(series));
  return report::write_report(flags.report, in);
}

int run_plan(const PlanFlags& flags) {
  // Before the search, which may take a while: no output may replace an input or a user's file.
  std::vector<OutputPath> outputs = {
      {flags.output, nullptr, true}, {flags.trace}, {flags.report, &report::report_folder_kind()}};
  auto usable = check_outputs(outputs, flags.pipeline.inputs());
  if (!usable) return report(usable.error());
  // --recompute and --zero auto: the cheapest step that fits; where none does and no part of
  // its shape is pinned, the shape sized (cli/step_sizing.h).
  bool dumped = false;
  auto first = open_session(flags.pipeline.step_variants(true).front(), dumped);
  if (!first) return report(first.error());
  if (dumped) return 0;
  if (auto still = check_outputs_after_import(outputs, flags.pipeline.inputs(), first->model->graph,
                                              first->model->source);
      !still)
    return report(still.error());
  auto planned = plan_step(flags.pipeline, flags.search, std::move(*first), flags.search.min_gpus);
  if (!planned) return report(planned.error());
  SearchSession* session = &planned->session;
  PlanOutcome* outcome = &planned->outcome;
  const PreparedModel& m = *session->model;
  const importers::Topology& topology = *m.topology;
  // Where the model is, seen from the plan file: compile and explain look there first.
  if (!flags.output.empty() && flags.output != "-")
    outcome->plan.model.path = model_path_from_plan(session->model->source, flags.output);
  const search::Plan& plan = outcome->plan;
  const search::PlanMetrics& dp = plan.baselines.at("data_parallel");

  if (flags.pipeline.dump_after == "plan") {
    std::fputs(search::plan_to_json(plan).c_str(), stdout);
    return 0;
  }
  if (flags.pipeline.dump_after == "program") {
    auto programs = compile_programs(m, outcome->configs, topology.num_devices());
    if (!programs) return report(programs.error());
    std::fputs(programs->to_text().c_str(), stdout);
    return 0;
  }
  if (!outcome->fits && m.replicas > 1) {
    // Replicas of a block: more GPUs repeat the block, they do not shrink it. The block must
    // grow (pipeline stages over several nodes, or fewer replicas) or its state be sharded.
    const int n = topology.num_devices();
    const int block = n / m.replicas;
    const int64_t state = replicated_state_bytes(m.graph);
    const int stages = std::max(1, m.pipeline_stages);
    const int per_stage = std::max(1, block / stages);
    // Stages of per_stage GPUs until the peak, shrinking about as the stages' share of the
    // model, fits in nine tenths of the memory.
    int k = stages;
    while (per_stage * k * 2 <= n &&
           static_cast<double>(plan.predicted.peak_memory_bytes) * stages / k >
               0.9 * static_cast<double>(outcome->memory_limit))
      k *= 2;
    std::fprintf(stderr,
                 "error: %s: does not fit: %d replicas of a plan for %d GPUs; the plan needs %s "
                 "on its largest device, over the limit of %s (the parameters and optimizer "
                 "state of one replica alone are %s, %s per GPU of its block). A block of more "
                 "GPUs would hold it: try --pipeline-stages %d --micro-batches %d (or more) "
                 "--replicas %d; or --recompute all, --zero 3%s\n",
                 m.source.c_str(), m.replicas, block,
                 format_bytes(static_cast<double>(plan.predicted.peak_memory_bytes)).c_str(),
                 format_bytes(static_cast<double>(outcome->memory_limit)).c_str(),
                 format_bytes(static_cast<double>(state)).c_str(),
                 format_bytes(static_cast<double>(state) / block).c_str(), k, 2 * k,
                 std::max(1, n / (per_stage * k)),
                 planned->sizing.empty() ? "" : ("; " + planned->sizing).c_str());
    return 4;
  }
  if (!outcome->fits) {
    int64_t smallest = std::min(plan.predicted.peak_memory_bytes, dp.peak_memory_bytes);
    std::fprintf(
        stderr,
        "error: %s: does not fit: the plan needs %s on its largest device, over the limit of %s; "
        "the smallest found needs %s; about %d GPUs would fit (try --search frontier, or more "
        "GPUs%s)\n",
        m.source.c_str(),
        format_bytes(static_cast<double>(plan.predicted.peak_memory_bytes)).c_str(),
        format_bytes(static_cast<double>(outcome->memory_limit)).c_str(),
        format_bytes(static_cast<double>(smallest)).c_str(),
        gpus_to_fit(smallest, outcome->memory_limit, topology.num_devices()),
        planned->sizing.empty() ? training_hint(m, smallest, outcome->memory_limit).c_str()
                                : ("; " + planned->sizing).c_str());
    return 4;
  }
  if (!flags.output.empty() && flags.output != "-") {
    auto written = search::write_plan(plan, flags.output);
    if (!written) return report(written.error());
  }
  if (!flags.trace.empty() || !flags.report.empty()) {
    // The compiled step's timeline: the one the plan's figures come from.
    // With replicas, two replicas' step (the one the figures come from).
    auto simulated = session->replicas
                         ? simulate_plan(*session->replicas->two, outcome->pair_configs)
                         : simulate_plan(m, outcome->configs);
    if (!simulated) return report(simulated.error());
    const analysis::TaskGraph& graph = simulated->tasks.graph;
    const analysis::Timeline& timeline = simulated->timeline;
    if (!flags.trace.empty()) {
      auto w = write_file_atomically(flags.trace, analysis::to_chrome_trace(graph, timeline));
      if (!w) return report(w.error());
    }
    if (!flags.report.empty()) {
      auto w = write_report_folder(flags, *session, *outcome, graph, timeline);
      if (!w) return report(w.error());
    }
  }
  if (flags.output == "-") {
    std::fputs(search::plan_to_json(plan).c_str(), stdout);
    return 0;
  }
  if (flags.format == Format::kJson) {
    nlohmann::ordered_json j;
    j["model"] = m.source;
    j["plan"] = flags.output;
    j["search"] = plan.search.algorithm;
    j["predicted"] = {{"step_time_s", plan.predicted.step_time_s},
                      {"peak_memory_bytes", plan.predicted.peak_memory_bytes},
                      {"comm_bytes", plan.predicted.comm_bytes}};
    j["data_parallel"] = {{"step_time_s", dp.step_time_s},
                          {"peak_memory_bytes", dp.peak_memory_bytes},
                          {"comm_bytes", dp.comm_bytes}};
    if (!flags.report.empty()) j["report"] = flags.report;
    j["notes"] = outcome->notes;
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("model        %s (%s, %d operators in %d groups)\n", m.source.c_str(),
              plan.mode.c_str(), m.graph.num_ops(), session->context().space.num_groups());
  std::printf("topology     %s (%d GPUs, %d %s)\n", topology.name().c_str(), topology.num_devices(),
              topology.num_nodes(), topology.num_nodes() == 1 ? "node" : "nodes");
  std::printf("search       %s, %s\n", plan.search.algorithm.c_str(),
              format_seconds(outcome->search_seconds).c_str());
  if (m.pipeline_stages > 1)
    std::printf("pipeline     %d stages of %d GPUs, %s\n", m.pipeline_stages,
                topology.num_devices() / m.pipeline_stages,
                outcome->gpipe_fallback
                    ? "gpipe schedule (1F1B cannot order this plan: see the note)"
                    : codegen::schedule_phrase(codegen::schedule_name(m.schedule), m.virtual_stages)
                          .c_str());
  if (m.micro_batches > 1)
    std::printf("batch        %lld in %d micro-batches of %lld, gradients accumulated\n",
                static_cast<long long>(m.micro_batch * m.micro_batches), m.micro_batches,
                static_cast<long long>(m.micro_batch));
  std::printf("\n               %-14s %-14s\n", "this plan", "data parallel");
  std::printf("step time      %-14s %-14s %s\n", format_seconds(plan.predicted.step_time_s).c_str(),
              format_seconds(dp.step_time_s).c_str(),
              ratio(plan.predicted.step_time_s, dp.step_time_s, "faster", "slower").c_str());
  std::printf("peak memory    %-14s %-14s %s\n",
              format_bytes(static_cast<double>(plan.predicted.peak_memory_bytes)).c_str(),
              format_bytes(static_cast<double>(dp.peak_memory_bytes)).c_str(),
              ratio(static_cast<double>(plan.predicted.peak_memory_bytes),
                    static_cast<double>(dp.peak_memory_bytes), "less", "more")
                  .c_str());
  std::printf("communication  %-14s %-14s %s\n",
              format_bytes(static_cast<double>(plan.predicted.comm_bytes)).c_str(),
              format_bytes(static_cast<double>(dp.comm_bytes)).c_str(),
              ratio(static_cast<double>(plan.predicted.comm_bytes),
                    static_cast<double>(dp.comm_bytes), "less", "more")
                  .c_str());
  for (const std::string& note : outcome->notes)
    std::printf("\nnote: %s\n", terminal_safe(note).c_str());
  std::printf("\nplan written to %s\n", flags.output.c_str());
  if (!flags.trace.empty()) std::printf("trace written to %s\n", flags.trace.c_str());
  if (!flags.report.empty())
    std::printf("report written to %s (open index.html)\n", flags.report.c_str());
  return 0;
}

}  // namespace

void configure_plan(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<PlanFlags>();
  flags->pipeline.add_to(app);
  flags->pipeline.plans = true;
  flags->search.add_to(app);
  app.add_option("-o,--output", flags->output,
                 "where to write the plan (default plan.json; - prints it)");
  app.add_option("--trace", flags->trace,
                 "write the plan's simulated timeline as Chrome trace-event JSON");
  app.add_option(
      "--report", flags->report,
      "write a report folder: index.html with the summary and pictures (SVG) of the frontier, the "
      "large tensors' tiling and the timeline, trace.json and plan.json");
  add_format_flag(app, flags->format);
  run = [flags] { return run_plan(*flags); };
}

}  // namespace planner::cli
