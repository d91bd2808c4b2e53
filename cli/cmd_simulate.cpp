// `planner simulate MODEL`: a baseline strategy compiled, and its compiled step simulated.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/lowering.h"
#include "analysis/simulator.h"
#include "analysis/trace.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/pipeline.h"
#include "cli/plan_model.h"
#include "cli/replicated_plan.h"
#include "search/pipeline.h"
#include "search/search.h"
#include "support/output_file.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct SimulateFlags {
  PipelineFlags pipeline;
  std::string strategy = "data-parallel";
  std::string trace;
  Format format = Format::kTable;
};

int run_simulate(const SimulateFlags& flags) {
  if (refuse_replicas(flags.pipeline,
                      "simulate runs a baseline on all the GPUs; plan with --replicas instead"))
    return 1;
  if (auto usable = check_outputs({{flags.trace}}, flags.pipeline.inputs()); !usable)
    return report(usable.error());
  bool dumped = false;
  auto prepared = prepare_model(flags.pipeline, dumped);
  if (!prepared) return report(prepared.error());
  if (dumped) return 0;
  const PreparedModel& m = **prepared;
  if (auto still =
          check_outputs_after_import({{flags.trace}}, flags.pipeline.inputs(), m.graph, m.source);
      !still)
    return report(still.error());
  const importers::Topology& topology = *m.topology;
  const analysis::Lowering& lowering = *m.lowering;
  auto baseline = flags.strategy == "model-parallel" ? analysis::Baseline::kModelParallel
                                                     : analysis::Baseline::kDataParallel;
  auto configs = analysis::baseline_configs(lowering, baseline, topology.num_devices());
  if (!configs) return report(configs.error().with_context(m.source));
  if (m.pipeline_stages > 1) {
    // The strategy inside each of the pipeline stages (search/pipeline.h).
    auto space = search::GroupSpace::create(lowering, m.train ? &m.training : nullptr);
    if (!space) return report(space.error().with_context(m.source));
    space->set_micro_batches(m.micro_batches);
    auto info = search::find_search(flags.strategy);
    if (!info) return report(info.error());
    search::SearchOptions options;
    options.virtual_stages = m.virtual_stages;
    auto staged = search::run_pipelined(**info, {lowering, *space, m.train ? &m.training : nullptr},
                                        options, m.pipeline_stages);
    if (!staged) return report(staged.error().with_context(m.source));
    configs = std::move(staged->configs);
  }
  if (flags.pipeline.dump_after == "plan") {
    for (ir::OpId id : m.graph.topo_order())
      std::printf("%s %s\n", terminal_safe(m.graph.op(id).name).c_str(),
                  (*configs)[static_cast<size_t>(id)].to_string().c_str());
    return 0;
  }
  // The compiled step of the strategy, simulated: what plan and compile report for it.
  auto simulated = simulate_plan(m, *configs);
  if (simulated && flags.pipeline.dump_after == "program") {
    std::fputs(simulated->programs.to_text().c_str(), stdout);
    return 0;
  }
  if (!simulated) return report(simulated.error());
  const codegen::ProgramTasks& tasks = simulated->tasks;
  const analysis::Timeline* timeline = &simulated->timeline;
  if (!flags.trace.empty()) {
    auto written =
        write_file_atomically(flags.trace, analysis::to_chrome_trace(tasks.graph, *timeline));
    if (!written) return report(written.error());
  }
  const int n = topology.num_devices();
  const int64_t peak = simulated->cost.peak_memory_bytes;

  if (flags.format == Format::kJson) {
    nlohmann::ordered_json j;
    j["model"] = m.source;
    j["topology"] = {{"name", topology.name()}, {"num_devices", n}};
    j["mode"] = flags.pipeline.mode;
    j["strategy"] = flags.strategy;
    j["step_time_s"] = timeline->step_time;
    j["synchronized_gpus"] = tasks.synchronized_gpus;
    j["kernel_stretch"] = tasks.kernel_stretch;
    j["peak_memory_bytes"] = peak;
    j["comm_bytes"] = tasks.comm_bytes;
    j["tasks"] = tasks.graph.num_tasks();
    j["kernels"] = simulated->cost.kernels;
    j["kernels_whole"] = simulated->cost.kernels_whole;
    j["devices"] = nlohmann::ordered_json::array();
    for (int d = 0; d < n; ++d) {
      const auto& c =
          timeline->resources[static_cast<size_t>(tasks.compute[static_cast<size_t>(d)])];
      const auto& ch =
          timeline->resources[static_cast<size_t>(tasks.channel[static_cast<size_t>(d)])];
      j["devices"].push_back({{"device", d},
                              {"busy_s", c.busy},
                              {"idle_s", c.idle},
                              {"peak_memory_bytes", c.peak_memory},
                              {"comm_busy_s", ch.busy},
                              {"bytes_sent", ch.bytes}});
    }
    j["links"] = nlohmann::ordered_json::array();
    for (size_t l = 0; l < tasks.link_bytes.size(); ++l) {
      if (tasks.link_bytes[l] <= 0) continue;
      const auto& link = topology.links()[l];
      j["links"].push_back(
          {{"link", topology.endpoints()[static_cast<size_t>(link.a)].name + " - " +
                        topology.endpoints()[static_cast<size_t>(link.b)].name},
           {"bytes", tasks.link_bytes[l]}});
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("model        %s (%s, %d operators)\n", m.source.c_str(), flags.pipeline.mode.c_str(),
              m.graph.num_ops());
  std::printf("topology     %s (%d GPUs, %d nodes)\n", topology.name().c_str(), n,
              topology.num_nodes());
  std::printf("strategy     %s\n", flags.strategy.c_str());
  if (m.pipeline_stages > 1)
    std::printf("pipeline     %d stages of %d GPUs, %s\n", m.pipeline_stages, n / m.pipeline_stages,
                codegen::schedule_phrase(m.micro_batches > 1 ? simulated->programs.schedule
                                                             : codegen::schedule_name(m.schedule),
                                         m.virtual_stages)
                    .c_str());
  if (m.micro_batches > 1)
    std::printf("batch        %lld in %d micro-batches of %lld, gradients accumulated\n",
                static_cast<long long>(m.micro_batch * m.micro_batches), m.micro_batches,
                static_cast<long long>(m.micro_batch));
  std::printf("step time    %s\n", format_seconds(timeline->step_time).c_str());
  if (tasks.kernel_stretch > 1)
    std::printf(
        "             kernels x%.3f: the wait for the slowest of %d GPUs (speed spread %g)\n",
        tasks.kernel_stretch, tasks.synchronized_gpus, m.compute.speed_spread);
  std::printf("peak memory  %s (largest device)\n",
              format_bytes(static_cast<double>(peak)).c_str());
  std::printf("comm         %s sent in one step\n", format_bytes(tasks.comm_bytes).c_str());
  std::printf("tasks        %d (%d kernel calls per step, %d of whole operators)\n",
              tasks.graph.num_tasks(), simulated->cost.kernels, simulated->cost.kernels_whole);
  std::printf("\ndevice  compute busy  idle        comm busy   peak memory\n");
  for (int d = 0; d < n; ++d) {
    const auto& c = timeline->resources[static_cast<size_t>(tasks.compute[static_cast<size_t>(d)])];
    const auto& ch =
        timeline->resources[static_cast<size_t>(tasks.channel[static_cast<size_t>(d)])];
    std::printf("%-6d  %-12s  %-10s  %-10s  %s\n", d, format_seconds(c.busy).c_str(),
                format_seconds(c.idle).c_str(), format_seconds(ch.busy).c_str(),
                format_bytes(static_cast<double>(c.peak_memory)).c_str());
  }
  // The busiest links: where the step's bytes go (both directions together).
  std::vector<size_t> busy;
  for (size_t l = 0; l < tasks.link_bytes.size(); ++l)
    if (tasks.link_bytes[l] > 0) busy.push_back(l);
  std::stable_sort(busy.begin(), busy.end(),
                   [&](size_t a, size_t b) { return tasks.link_bytes[a] > tasks.link_bytes[b]; });
  if (!busy.empty()) {
    std::printf("\nbusiest links (of %zu carrying traffic)\n", busy.size());
    for (size_t i = 0; i < std::min<size_t>(5, busy.size()); ++i) {
      const auto& link = topology.links()[busy[i]];
      std::printf("  %-40s %s\n",
                  (topology.endpoints()[static_cast<size_t>(link.a)].name + " - " +
                   topology.endpoints()[static_cast<size_t>(link.b)].name)
                      .c_str(),
                  format_bytes(tasks.link_bytes[busy[i]]).c_str());
    }
  }
  if (!flags.trace.empty()) std::printf("\ntrace written to %s\n", flags.trace.c_str());
  return 0;
}

}  // namespace

void configure_simulate(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<SimulateFlags>();
  flags->pipeline.add_to(app);
  flags->pipeline.plans = true;
  app.add_option("--strategy", flags->strategy, "baseline strategy to simulate")
      ->check(CLI::IsMember({"data-parallel", "model-parallel"}));
  app.add_option("--trace", flags->trace,
                 "write the simulated timeline as Chrome trace-event JSON");
  add_format_flag(app, flags->format);
  run = [flags] { return run_simulate(*flags); };
}

}  // namespace planner::cli
