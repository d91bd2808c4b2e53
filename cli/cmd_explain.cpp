// `planner explain PLAN.json --model MODEL [--op NAME]`: why the plan chose what it chose.
#include <algorithm>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "analysis/lowering.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/plan_model.h"
#include "search/cost_tables.h"
#include "search/explain.h"
#include "search/pipeline.h"
#include "search/plan.h"
#include "search/space.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct ExplainFlags {
  std::string plan;
  ModelFlags model;
  std::string op;
  std::string optimizer = "sgd";
  std::string costs;        ///< --costs FILE: measured kernel times, as plan takes them
  std::string calibration;  ///< --calibration FILE: the kernel model's parameters
  std::string topology;     ///< --topology: the plan's topology file (presets need none)
  int top = 10;
};

int run_explain(ExplainFlags flags) {
  auto plan = load_plan_and_model(flags.plan, flags.model.model_path);
  if (!plan) return report(plan.error());
  auto model = prepare_for_plan(*plan, flags.plan, flags.model, flags.optimizer, flags.costs,
                                flags.calibration, flags.topology);
  if (!model) return report(model.error());
  const PreparedModel& m = **model;
  const analysis::Lowering& lowering = *m.lowering;
  auto space = search::GroupSpace::create(lowering, m.train ? &m.training : nullptr);
  if (!space) return report(space.error().with_context(m.source));
  const std::vector<analysis::OpConfig> configs = plan_configs(*plan);
  ir::OpId op = ir::kNoOp;
  if (!flags.op.empty()) {
    std::vector<std::string> names;
    for (ir::OpId id = 0; id < m.graph.num_ops(); ++id) {
      names.push_back(m.graph.op(id).name);
      if (m.graph.op(id).name == flags.op) op = id;
    }
    if (op == ir::kNoOp) {
      std::string close = closest_match(flags.op, names, 4);
      return report(Error(
          close.empty() ? fmt::format("{}: no operator '{}' in the plan", flags.plan, flags.op)
                        : fmt::format("{}: no operator '{}' in the plan; did you mean '{}'?",
                                      flags.plan, flags.op, close)));
    }
  }
  std::printf("plan      %s (%s, %d GPUs, search %s)\n", flags.plan.c_str(), plan->mode.c_str(),
              plan->topology.num_devices, plan->search.algorithm.c_str());
  std::printf("predicted %s per step, %s on the largest GPU, %s sent\n",
              format_seconds(plan->predicted.step_time_s).c_str(),
              format_bytes(static_cast<double>(plan->predicted.peak_memory_bytes)).c_str(),
              format_bytes(static_cast<double>(plan->predicted.comm_bytes)).c_str());
  if (search::on_stage_blocks(configs, plan->topology.num_devices, m.pipeline_stages))
    std::printf(
        "pipeline  %d stages of %d GPUs, %s\n", m.pipeline_stages,
        plan->topology.num_devices / m.pipeline_stages,
        codegen::schedule_phrase(codegen::schedule_name(m.schedule), m.virtual_stages).c_str());
  if (m.micro_batches > 1)
    std::printf(
        "batch     %lld in %d micro-batches of %lld: %d forward and backward passes, "
        "gradients accumulated, one update\n",
        static_cast<long long>(m.micro_batch * m.micro_batches), m.micro_batches,
        static_cast<long long>(m.micro_batch), m.micro_batches);
  // The kernels the step runs as frameworks do: fused attention, FP8 products.
  int attention = 0, fp8 = 0;
  for (ir::OpId id = 0; id < m.graph.num_ops(); ++id) {
    const ir::Op& op = m.graph.op(id);
    const bool forward =
        !m.train || m.training.op_phase[static_cast<size_t>(id)] == analysis::Phase::kForward;
    attention += forward && op.domain == "ai.planner" && op.op_type == "Attention";
    fp8 += op.fp8;
  }
  if (attention > 0)
    std::printf("attention %d cores, each one fused operator (--attention fused)\n", attention);
  if (fp8 > 0)
    std::printf("fp8       %d matrix products on FP8 tensor cores (--precision fp8)\n", fp8);
  if (m.train) {
    // The backward pass's recomputation (analysis/recompute.h).
    int clones = 0;
    for (analysis::Phase p : m.training.op_phase) clones += p == analysis::Phase::kRecompute;
    if (clones > 0)
      std::printf(
          "recompute %d forward operators run again in the backward pass (--recompute %s)\n",
          clones, std::string(analysis::recompute_name(m.recompute)).c_str());
  }

  if (flags.op.empty()) {
    // The groups that cost the most under the plan, with their choices.
    std::vector<std::vector<search::CutList>> cands(static_cast<size_t>(space->num_groups()));
    const int n = plan->topology.num_devices;
    for (int g = 0; g < space->num_groups(); ++g) {
      auto c = space->cuts_of(g, configs[static_cast<size_t>(space->leader(g))]);
      cands[static_cast<size_t>(g)] = {c ? *c : search::CutList{{"", n}}};
    }
    auto tables = search::CostTables::build(*space, cands, search::all_devices(n), {});
    if (!tables) return report(tables.error().with_context(m.source));
    std::vector<std::pair<double, int>> cost;
    for (int g = 0; g < space->num_groups(); ++g) cost.push_back({tables->node(g)[0].time, g});
    std::stable_sort(cost.begin(), cost.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::printf(
        "\nthe %d costliest operator groups (a forward operator with its backward and update):\n",
        std::min<int>(flags.top, space->num_groups()));
    std::printf("  %-40s %-12s %-16s %s\n", "operator", "own time", "cuts", "config");
    for (int i = 0; i < std::min<int>(flags.top, static_cast<int>(cost.size())); ++i) {
      int g = cost[static_cast<size_t>(i)].second;
      ir::OpId leader = space->leader(g);
      std::printf("  %-40s %-12s %-16s %s\n", terminal_safe(m.graph.op(leader).name).c_str(),
                  format_seconds(cost[static_cast<size_t>(i)].first).c_str(),
                  search::cuts_to_string(cands[static_cast<size_t>(g)][0]).c_str(),
                  configs[static_cast<size_t>(leader)].to_string().c_str());
    }
    std::printf(
        "\nplanner explain %s --model %s --op NAME shows one operator's options and why it won\n",
        flags.plan.c_str(), m.source.c_str());
    return 0;
  }

  const int group = space->group_of(op);
  const ir::OpId leader = space->leader(group);
  auto e = search::explain_group(*space, configs, group);
  if (!e) return report(e.error().with_context(m.source));
  std::printf("\noperator  %s (%s)", terminal_safe(m.graph.op(op).name).c_str(),
              terminal_safe(m.graph.op(op).op_type).c_str());
  if (leader != op)
    std::printf(", in the group of %s", terminal_safe(m.graph.op(leader).name).c_str());
  std::printf("\nchosen    %s\n", configs[static_cast<size_t>(leader)].to_string().c_str());
  std::printf(
      "\n%d options, each with the rest of the plan as it is (step time and peak memory "
      "simulated):\n",
      static_cast<int>(e->options.size()));
  std::printf("  %-14s %-22s %-11s %-11s %-11s %-11s %s\n", "cuts", "config", "own time",
              "conversions", "step time", "peak mem", "");
  for (const auto& o : e->options)
    std::printf(
        "  %-14s %-22s %-11s %-11s %-11s %-11s %s\n", search::cuts_to_string(o.cuts).c_str(),
        o.leader_config.c_str(), format_seconds(o.compute_s).c_str(),
        format_seconds(o.conversion_s).c_str(), format_seconds(o.step_time_s).c_str(),
        format_bytes(static_cast<double>(o.peak_memory)).c_str(), o.chosen ? "<- the plan's" : "");
  std::printf("\n%s\n", terminal_safe(e->verdict).c_str());
  return 0;
}

}  // namespace

void configure_explain(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<ExplainFlags>();
  app.add_option("plan", flags->plan, "plan file (JSON)")->required();
  app.add_option("--model", flags->model.model_path,
                 "the model the plan was made for (default: the file the plan names, next to the "
                 "plan or in the working folder)");
  app.add_option("--op", flags->op,
                 "the operator to explain (any operator of the plan; default: a summary)");
  app.add_option("--top", flags->top, "operator groups in the summary (default 10)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", flags->model.batch, "batch size (default: the plan's)");
  app.add_option("--dim", flags->model.dims, "bind a named dimension, NAME=VALUE (repeatable)");
  app.add_option("--costs", flags->costs,
                 "measured kernel times (JSON written by a launcher), as the plan was priced with");
  app.add_option("--calibration", flags->calibration,
                 "the kernel model's parameters (JSON, docs/cost-model.md), as the plan was priced "
                 "with");
  app.add_option("--topology", flags->topology,
                 "the topology file the plan was made for (built-in topologies need none)");
  app.add_option("--optimizer", flags->optimizer, "optimizer when the plan does not record one")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  run = [flags] { return run_explain(*flags); };
}

}  // namespace planner::cli
