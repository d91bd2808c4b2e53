// `planner inspect MODEL`: what a model is made of, before any planning.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "analysis/coarsen.h"
#include "analysis/op_strategies.h"
#include "analysis/training_graph.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/tdl_flags.h"
#include "importers/onnx_import.h"
#include "ir/op_stats.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct InspectFlags {
  ModelFlags model;
  Format format = Format::kTable;
  bool dump_graph = false;
  TdlFlags tdl;
  bool strategies = false;        ///< per operator, the number of partition strategies
  std::string mode = "infer";     ///< train: also summarise the training step and its groups
  std::string optimizer = "sgd";  ///< the update in train mode
};

// `inspect --mode train`: the training step's size and Tofu's coarsening of it.
struct TrainingSummary {
  int ops = 0, forward = 0, backward = 0, update = 0;
  int groups = 0, classes = 0, blocks = 0, merged = 0;
  int64_t optimizer_state_bytes = 0;
};

Expected<TrainingSummary> summarise_training(const ir::Graph& graph, const tdl::Library& library,
                                             const InspectFlags& flags) {
  analysis::TrainingOptions options;
  options.optimizer = flags.optimizer == "adam"       ? analysis::Optimizer::kAdam
                      : flags.optimizer == "momentum" ? analysis::Optimizer::kMomentum
                                                      : analysis::Optimizer::kSgd;
  PLANNER_TRY_ASSIGN(analysis::TrainingGraph tg,
                     analysis::build_training_graph(graph, options, flags.model.model_path));
  analysis::StrategyCache cache(library);
  PLANNER_TRY_ASSIGN(analysis::GraphStrategies all,
                     analysis::analyze_graph(cache, tg.graph, flags.model.model_path));
  analysis::Coarsening c = analysis::coarsen(tg.graph, tg.op_group, [&](ir::OpId id) {
    const analysis::OpStrategies* s = all.per_op[static_cast<size_t>(id)];
    return !s->replicated && s->analysis->elementwise;
  });
  TrainingSummary out;
  out.ops = tg.graph.num_ops();
  for (analysis::Phase p : tg.op_phase) {
    out.forward += p == analysis::Phase::kForward;
    out.backward += p == analysis::Phase::kBackward;
    out.update += p == analysis::Phase::kUpdate;
  }
  out.groups = static_cast<int>(c.groups.size());
  out.classes = c.num_classes;
  out.blocks = static_cast<int>(c.blocks.size());
  out.merged = c.merged_elementwise;
  for (const ir::Tensor& t : tg.graph.tensors())
    if (t.role == ir::TensorRole::kOptimizerState) out.optimizer_state_bytes += t.num_bytes();
  return out;
}

// Operator types the library cannot describe, with their counts, sorted by type: these are
// kept whole (replicated) by the planner.
std::map<std::string, int> undescribed_ops(const ir::Graph& graph, const tdl::Library& library) {
  std::map<std::string, int> out;
  for (const ir::Op& op : graph.ops())
    if (!library.find(op.op_type, op.domain))
      ++out[op.domain.empty() || op.domain == "ai.onnx" ? op.op_type
                                                        : op.domain + "." + op.op_type];
  return out;
}

nlohmann::ordered_json tensor_json(const ir::Tensor& t) {
  return {{"name", t.name}, {"dtype", ir::dtype_name(t.dtype)}, {"shape", t.shape}};
}

// Op types by descending count, ties by name: the order a reader wants.
std::vector<std::pair<std::string, int>> sorted_counts(const std::map<std::string, int>& counts) {
  std::vector<std::pair<std::string, int>> v(counts.begin(), counts.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

// `inspect --strategies`: per operator, how many ways the planner can split it.
int print_strategies(const ir::Graph& graph, const tdl::Library& library,
                     const InspectFlags& flags) {
  analysis::StrategyCache cache(library);
  auto all = analysis::analyze_graph(cache, graph, flags.model.model_path);
  if (!all) return report(all.error());
  spdlog::debug("analysed {} operators ({} distinct) in {:.2f} ms", graph.num_ops(),
                cache.stats().analyses, all->milliseconds);
  if (flags.format == Format::kJson) {
    nlohmann::ordered_json j;
    j["model"] = flags.model.model_path;
    j["ops"] = nlohmann::ordered_json::array();
    for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
      const analysis::OpStrategies* s = all->per_op[static_cast<size_t>(id)];
      const ir::Op& op = graph.op(id);
      j["ops"].push_back({{"name", op.name},
                          {"type", op.domain.empty() ? op.op_type : op.domain + "." + op.op_type},
                          {"replicated", s->replicated},
                          {"strategies", s->num_strategies()}});
    }
    j["undescribed_ops"] = all->undescribed;
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  size_t name_width = 4, type_width = 4;
  // Names and types come from the model: printed escaped (terminal_safe), widths measured so.
  for (const ir::Op& op : graph.ops()) {
    name_width = std::max(name_width, terminal_safe(op.name).size());
    type_width = std::max(
        type_width,
        terminal_safe(op.domain.empty() ? op.op_type : op.domain + "." + op.op_type).size());
  }
  std::printf("%-*s  %-*s  %s\n", static_cast<int>(name_width), "op", static_cast<int>(type_width),
              "type", "strategies");
  for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
    const analysis::OpStrategies* s = all->per_op[static_cast<size_t>(id)];
    const ir::Op& op = graph.op(id);
    std::string type = terminal_safe(op.domain.empty() ? op.op_type : op.domain + "." + op.op_type);
    std::string what =
        s->replicated ? "replicated (no description)" : std::to_string(s->num_strategies());
    std::printf("%-*s  %-*s  %s\n", static_cast<int>(name_width), terminal_safe(op.name).c_str(),
                static_cast<int>(type_width), type.c_str(), what.c_str());
  }
  return 0;
}

int run_inspect(const InspectFlags& flags) {
  auto options = flags.model.import_options();
  if (!options) return report(options.error());
  auto graph = importers::import_model(flags.model.model_path, *options);
  if (!graph) return report(graph.error());
  if (flags.dump_graph) {
    std::fputs(terminal_safe(ir::to_text(*graph), /*keep_newlines=*/true).c_str(), stdout);
    return 0;
  }
  auto library = flags.tdl.load();
  if (!library) return report_tdl_error(library.error());
  if (flags.strategies) return print_strategies(*graph, *library, flags);
  ir::GraphStats stats = ir::graph_stats(*graph);
  auto counts = sorted_counts(stats.op_counts);
  auto undescribed = undescribed_ops(*graph, *library);
  std::optional<TrainingSummary> training;
  if (flags.mode == "train") {
    auto t = summarise_training(*graph, *library, flags);
    if (!t) return report(t.error());
    training = *t;
  }

  if (flags.format == Format::kJson) {
    nlohmann::ordered_json j;
    j["model"] = flags.model.model_path;
    j["graph"] = graph->name;
    j["num_ops"] = stats.num_ops;
    nlohmann::ordered_json by_type = nlohmann::ordered_json::object();
    for (const auto& [type, n] : counts) by_type[type] = n;
    j["op_counts"] = by_type;
    j["undescribed_ops"] = undescribed;
    j["parameters"] = {{"count", stats.parameter_count}, {"bytes", stats.parameter_bytes}};
    j["activation_bytes"] = stats.activation_bytes;
    j["forward_flops"] = stats.forward_flops;
    if (training)
      j["training"] = {{"optimizer", flags.optimizer},
                       {"ops", training->ops},
                       {"forward_ops", training->forward},
                       {"backward_ops", training->backward},
                       {"update_ops", training->update},
                       {"groups", training->groups},
                       {"group_classes", training->classes},
                       {"repeated_blocks", training->blocks},
                       {"merged_elementwise", training->merged},
                       {"optimizer_state_bytes", training->optimizer_state_bytes}};
    j["inputs"] = nlohmann::ordered_json::array();
    for (ir::TensorId t : graph->inputs) j["inputs"].push_back(tensor_json(graph->tensor(t)));
    j["outputs"] = nlohmann::ordered_json::array();
    for (ir::TensorId t : graph->outputs) j["outputs"].push_back(tensor_json(graph->tensor(t)));
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }

  std::string ops;
  for (const auto& [type, n] : counts)
    ops += fmt::format("{}{} {}", ops.empty() ? "" : ", ", type, n);
  std::printf("model        %s (graph '%s')\n", terminal_safe(flags.model.model_path).c_str(),
              terminal_safe(graph->name).c_str());
  std::printf("operators    %lld: %s\n", static_cast<long long>(stats.num_ops),
              terminal_safe(ops).c_str());
  std::string missing;
  for (const auto& [type, n] : undescribed)
    missing += fmt::format("{}{} {}", missing.empty() ? "" : ", ", type, n);
  std::printf("undescribed  %s\n",
              missing.empty()
                  ? "none"
                  : terminal_safe(missing + " (no TDL description: kept whole)").c_str());
  // The totals saturate at INT64_MAX bytes (ir/op_stats.h).
  auto total_bytes = [](int64_t bytes) {
    return bytes == std::numeric_limits<int64_t>::max()
               ? "more than " + format_bytes(static_cast<double>(bytes))
               : format_bytes(static_cast<double>(bytes));
  };
  std::printf("parameters   %s (%s)\n", format_count(stats.parameter_count).c_str(),
              total_bytes(stats.parameter_bytes).c_str());
  std::printf("activations  %s\n", total_bytes(stats.activation_bytes).c_str());
  std::printf("forward      %s\n", format_flops(stats.forward_flops).c_str());
  auto print_tensors = [&](const char* title, const std::vector<ir::TensorId>& ids) {
    std::printf("%s\n", title);
    for (ir::TensorId id : ids) {
      const ir::Tensor& t = graph->tensor(id);
      std::printf("  %-24s %s%s\n", terminal_safe(t.name).c_str(),
                  std::string(ir::dtype_name(t.dtype)).c_str(),
                  ir::shape_to_string(t.shape).c_str());
    }
  };
  print_tensors("inputs", graph->inputs);
  print_tensors("outputs", graph->outputs);
  if (training) {
    std::printf("training     %d operators: %d forward, %d backward, %d update (%s)\n",
                training->ops, training->forward, training->backward, training->update,
                flags.optimizer.c_str());
    std::printf(
        "groups       %d (each forward operator with its backward operators; %d element-wise "
        "merges), %d classes, %d repeated blocks\n",
        training->groups, training->merged, training->classes, training->blocks);
    std::printf("opt. state   %s\n",
                format_bytes(static_cast<double>(training->optimizer_state_bytes)).c_str());
  }
  return 0;
}

}  // namespace

void configure_inspect(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<InspectFlags>();
  flags->model.add_to(app);
  add_format_flag(app, flags->format);
  app.add_flag("--dump-graph", flags->dump_graph, "print the imported graph in its text form");
  app.add_flag("--strategies", flags->strategies,
               "per operator, the number of partition strategies its description offers");
  flags->tdl.add_to(app);
  app.add_option("--mode", flags->mode,
                 "infer (the forward graph) or train (also the training step)")
      ->check(CLI::IsMember({"infer", "train"}));
  app.add_option("--optimizer", flags->optimizer, "the optimizer of the training step")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  run = [flags] { return run_inspect(*flags); };
}

}  // namespace planner::cli
