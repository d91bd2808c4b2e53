// `planner export megatron PLAN.json`: the Megatron-LM arguments that run a plan's layout
// (docs/user-guide.md, "Running a plan in Megatron-LM").
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/plan_lookup.h"
#include "importers/onnx_import.h"
#include "search/plan.h"
#include "support/output_file.h"

namespace planner::cli {
namespace {

// The Megatron-LM commit whose argument parser the exported names were checked against
// (tests/cli/data/megatron_arguments.txt, scripts/megatron_arguments.py).
constexpr const char* kMegatronCommit = "d98e8a64ddf3";

struct ExportFlags {
  std::string target;
  std::string plan;
  ModelFlags model;
  std::string output;
};

// The transformer's shape as the model file shows it: attention cores (a Softmax over a
// [batch, heads, seq, seq] tensor), their heads and sequence, and the token embedding's width
// (the widest table a Gather looks rows up in). Zero where the model does not show it.
struct ModelShape {
  int64_t layers = 0, heads = 0, seq = 0, hidden = 0;
  /// With pipeline stages: the attention layers of each run of the forward pass on one stage,
  /// in order (run j on stage j % K: K x V runs with virtual stages); empty when the plan's
  /// stages could not be read.
  std::vector<int64_t> run_layers;
};

bool is_attention_softmax(const ir::Graph& g, const ir::Op& op) {
  if (!op.domain.empty() || op.op_type != "Softmax" || op.inputs.empty() ||
      op.inputs[0] == ir::kNoTensor)
    return false;
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  return in.rank() == 4 && in.shape[2] == in.shape[3];
}

// The layers of each run: the model's operators in topological order, each on the stage the
// plan puts its forward operator of the same name on (operators the plan does not have, a
// Softmax fused away, stay with the run before them); a new run starts where the stage changes.
std::vector<int64_t> layers_per_run(const ir::Graph& g, const search::Plan& plan, int stages) {
  const int n = plan.topology.num_devices;
  if (stages < 2 || n % stages != 0) return {};
  const int block = n / stages;
  std::map<std::string, int> stage_of;
  for (const search::PlanOp& op : plan.ops)
    if (op.phase == analysis::Phase::kForward && !op.config.devices.empty())
      stage_of[op.name] = op.config.devices.front() / block;
  std::vector<int64_t> runs;
  int previous = -1;
  for (ir::OpId id : g.topo_order()) {
    const ir::Op& op = g.op(id);
    auto it = stage_of.find(op.name);
    if (it != stage_of.end() && it->second != previous) {
      runs.push_back(0);
      previous = it->second;
    }
    if (!runs.empty() && is_attention_softmax(g, op)) ++runs.back();
  }
  return runs;
}

// Megatron-LM's --pipeline-model-parallel-layout for runs of `layers` ("E" the embedding, "t" a
// transformer layer, "L" the head and loss, "|" between runs): "Et*3|t*4|t*4|t*3L".
std::string layout_string(const std::vector<int64_t>& layers) {
  std::string out = "E";
  for (size_t j = 0; j < layers.size(); ++j) {
    if (j) out += "|";
    if (layers[j] == 1) out += "t";
    if (layers[j] > 1) out += fmt::format("t*{}", layers[j]);
  }
  return out + "L";
}

ModelShape model_shape(const ir::Graph& g) {
  ModelShape s;
  int64_t vocab = 0;
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    const ir::Op& op = g.op(id);
    if (!op.domain.empty() || op.inputs.empty() || op.inputs[0] == ir::kNoTensor) continue;
    const ir::Tensor& in = g.tensor(op.inputs[0]);
    if (is_attention_softmax(g, op)) {
      ++s.layers;
      s.heads = in.shape[1];
      s.seq = in.shape[2];
    } else if (op.op_type == "Gather" && in.role == ir::TensorRole::kParameter && in.rank() == 2 &&
               in.shape[0] > vocab) {
      vocab = in.shape[0];
      s.hidden = in.shape[1];
    }
  }
  return s;
}

int64_t option_int(const nlohmann::ordered_json& o, const char* key, int64_t fallback) {
  return o.contains(key) && o[key].is_number_integer() ? o[key].get<int64_t>() : fallback;
}

std::string option_string(const nlohmann::ordered_json& o, const char* key) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
}

Expected<std::string> megatron_arguments(const search::Plan& plan, const std::string& plan_path,
                                         const ModelShape& shape) {
  const nlohmann::ordered_json& o = plan.search.options;
  if (plan.mode != "train")
    return make_error("{}: an inference plan; Megatron-LM's arguments are for training", plan_path);
  const std::string& search = plan.search.algorithm;
  const bool megatron = search.starts_with("megatron");
  const int n = plan.topology.num_devices;
  const int64_t tp = megatron ? option_int(o, "tensor_parallel", 1) : 1;
  const int64_t pp = option_int(o, "pipeline_stages", 1);
  const int64_t vp = option_int(o, "virtual_stages", 1);
  if (tp < 1 || pp < 1 || n % (tp * pp) != 0)
    return make_error("{}: search.options: tensor {} x pipeline {} do not divide the {} GPUs",
                      plan_path, tp, pp, n);
  const int64_t dp = n / (tp * pp);
  const int64_t batch = option_int(o, "batch", 0);
  const int64_t passes = option_int(o, "micro_batches", 1);
  if (batch <= 0)
    return make_error("{}: search.options.batch: the plan records no global batch", plan_path);
  if (batch % (dp * passes) != 0)
    return make_error("{}: the batch {} is not {} data-parallel ranks x {} micro-batches",
                      plan_path, batch, dp, passes);
  std::vector<std::string> notes;
  if (!megatron && search != "data-parallel" && search != "fsdp")
    notes.push_back(fmt::format(
        "the plan's per-operator splits (search {}) are not a layout Megatron-LM runs: these are "
        "the nearest one's, data parallelism over every GPU inside its stages",
        search));
  std::vector<std::pair<std::string, std::string>> args = {
      {"--tensor-model-parallel-size", std::to_string(tp)},
      {"--pipeline-model-parallel-size", std::to_string(pp)}};
  // Pipeline stages: even runs of layers are Megatron-LM's default split (with virtual stages,
  // --num-layers-per-virtual-pipeline-stage); uneven ones its layout string.
  if (pp > 1 && shape.layers <= 0)
    return make_error(
        "{}: {} pipeline stages: Megatron-LM splits them by layers, and no attention layer was "
        "found in the model (give the model with --model)",
        plan_path, pp);
  if (pp > 1) {
    const std::vector<int64_t>& runs = shape.run_layers;
    if (runs.size() != static_cast<size_t>(pp * vp))
      return make_error(
          "{}: the model's operators walk the plan's stages in {} runs, not the {} pipeline x {} "
          "virtual stages it records",
          plan_path, runs.size(), pp, vp);
    const bool even =
        std::all_of(runs.begin(), runs.end(), [&](int64_t l) { return l == runs.front(); });
    if (!even) {
      args.push_back({"--pipeline-model-parallel-layout", layout_string(runs)});
      notes.push_back(fmt::format(
          "the plan's stages hold {} layers (stage j % {} runs the j-th): uneven, so the layout "
          "string places them",
          fmt::join(runs, ", "), pp));
    } else if (vp > 1) {
      args.push_back({"--num-layers-per-virtual-pipeline-stage", std::to_string(runs.front())});
    }
  }
  if (o.contains("sequence_parallel") && o["sequence_parallel"].is_boolean() &&
      o["sequence_parallel"].get<bool>())
    args.push_back({"--sequence-parallel", ""});
  args.push_back({"--micro-batch-size", std::to_string(batch / (dp * passes))});
  args.push_back({"--global-batch-size", std::to_string(batch)});
  const std::string recompute = option_string(o, "recompute");
  if (recompute == "all") {
    args.push_back({"--recompute-granularity", "full"});
    args.push_back({"--recompute-method", "uniform"});
    args.push_back({"--recompute-num-layers", "1"});
  } else if (recompute == "selective" || recompute == "ops") {
    args.push_back({"--recompute-granularity", "selective"});
    if (recompute == "ops")
      notes.push_back(
          "recomputation: torchtitan's op-level policy has no Megatron-LM form; the nearest is "
          "selective (the attention cores)");
  }
  const int64_t zero = option_int(o, "zero", 0);
  if (zero >= 2) {
    args.push_back({"--use-distributed-optimizer", ""});
    notes.push_back(fmt::format(
        "ZeRO {}: Megatron-LM's distributed optimizer shards the optimizer state and reduce-"
        "scatters the gradients, but keeps whole parameters{}",
        zero, zero == 3 ? " (ZeRO-3's parameter sharding is --use-megatron-fsdp)" : ""));
  }
  const std::string precision = option_string(o, "precision");
  if (precision == "bf16" || precision == "fp8") args.push_back({"--bf16", ""});
  if (precision == "fp16") args.push_back({"--fp16", ""});
  if (precision == "fp8") args.push_back({"--fp8-format", "hybrid"});
  if (option_string(o, "attention") == "fused") args.push_back({"--use-flash-attn", ""});
  if (shape.layers > 0) args.push_back({"--num-layers", std::to_string(shape.layers)});
  if (shape.hidden > 0) args.push_back({"--hidden-size", std::to_string(shape.hidden)});
  if (shape.heads > 0) args.push_back({"--num-attention-heads", std::to_string(shape.heads)});
  if (shape.seq > 0) {
    args.push_back({"--seq-length", std::to_string(shape.seq)});
    args.push_back({"--max-position-embeddings", std::to_string(shape.seq)});
  }

  std::string out = fmt::format(
      "# Megatron-LM arguments for {} ({} GPUs: tensor {} x pipeline {} x data {}{}), names as "
      "Megatron-LM {} parses them\n",
      plan_path, n, tp, pp, dp, vp > 1 ? fmt::format(", {} virtual stages", vp) : "",
      kMegatronCommit);
  for (const std::string& note : notes) out += "# note: " + note + "\n";
  out +=
      "# the model's other shape arguments (FFN width, query groups, normalisation), its "
      "tokenizer, data and optimizer settings are yours\n";
  const int nodes = std::max(1, plan.topology.num_nodes);
  out += fmt::format(
      "# launch: torchrun --nnodes {} --nproc-per-node {} pretrain_gpt.py ARGS "
      "(Slurm: srun --nodes {} --ntasks-per-node {} ...)\n",
      nodes, n / nodes, nodes, n / nodes);
  for (const auto& [flag, value] : args)
    out += value.empty() ? flag + "\n" : flag + " " + value + "\n";
  return out;
}

int run_export(const ExportFlags& flags) {
  if (flags.target != "megatron")
    return report(Error(fmt::format("export: no target '{}' (megatron)", flags.target)));
  std::string model_path = flags.model.model_path;
  if (auto guard =
          check_outputs({{flags.output}}, {{flags.plan, "the plan"}, {model_path, "the model"}});
      !guard)
    return report(guard.error());
  auto plan = load_plan_and_model(flags.plan, model_path);
  if (!plan) return report(plan.error());
  ModelShape shape;
  if (!model_path.empty()) {
    auto options = flags.model.import_options();
    if (!options) return report(options.error());
    if (!options->batch) options->batch = 1;
    auto graph = importers::import_model(model_path, *options);
    if (!graph) return report(graph.error().with_context(model_path));
    shape = model_shape(*graph);
    shape.run_layers = layers_per_run(
        *graph, *plan, static_cast<int>(option_int(plan->search.options, "pipeline_stages", 1)));
  }
  auto text = megatron_arguments(*plan, flags.plan, shape);
  if (!text) return report(text.error());
  if (flags.output.empty()) {
    std::fputs(text->c_str(), stdout);
    return 0;
  }
  if (auto written = write_file_atomically(flags.output, *text); !written)
    return report(written.error());
  return 0;
}

}  // namespace

void configure_export(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<ExportFlags>();
  app.add_option("target", flags->target, "what to export for: megatron (Megatron-LM arguments)")
      ->required()
      ->check(CLI::IsMember({"megatron"}));
  app.add_option("plan", flags->plan, "plan file (JSON)")->required();
  app.add_option("--model", flags->model.model_path,
                 "the model the plan was made for, for the shape arguments (default: the file "
                 "the plan names)");
  app.add_option("-o,--output", flags->output,
                 "write the arguments to this file (default: stdout)");
  run = [flags] { return run_export(*flags); };
}

}  // namespace planner::cli
