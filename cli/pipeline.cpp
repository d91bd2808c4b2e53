// The front of the pipeline, in its fixed order, each stage dumpable with --dump-after.
#include "cli/pipeline.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "analysis/coarsen.h"
#include "analysis/fuse_attention.h"
#include "analysis/fusion.h"
#include "analysis/precision.h"
#include "importers/onnx_import.h"
#include "search/space.h"
#include "support/text.h"

namespace planner::cli {

void PipelineFlags::add_to(CLI::App& app) {
  model.add_to(app);
  topology.add_to(app);
  tdl.add_to(app);
  app.add_option("--mode", mode, "train (forward, backward and update; the default) or infer")
      ->check(CLI::IsMember({"train", "infer"}));
  app.add_option("--optimizer", optimizer, "optimizer of the update in train mode")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  app.add_option("--precision", precision,
                 "fp32 (default), tf32 (TF32 tensor-core matmuls), fp16 or bf16 (mixed precision "
                 "as PyTorch AMP), fp8 (bf16 with linear layers on FP8 tensor cores, as "
                 "torchao's Float8Linear)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16", "fp8"}));
  app.add_option("--framework", framework,
                 "price kernels as this framework fuses them: none (every operator its own "
                 "kernel; the default), torch (eager PyTorch: GEMM bias epilogues, GELU), "
                 "megatron (torch's, plus fused bias-GELU, scale-mask-softmax and "
                 "bias-dropout-add) or torch-compile (every chain of element-wise, softmax and "
                 "normalisation operators between GEMMs); docs/cost-model.md")
      ->check(CLI::IsMember({"none", "torch", "megatron", "torch-compile"}));
  app.add_option("--attention", attention,
                 "materialized (the attention cores as the model writes them: scores, softmax "
                 "and probabilities are tensors; the default) or fused (each core one "
                 "FlashAttention-style operator that keeps no sequence x sequence tensor, as "
                 "torch's scaled_dot_product_attention runs it); docs/training.md")
      ->check(CLI::IsMember({"materialized", "fused"}));
  app.add_option("--recompute", recompute,
                 "train mode: none (keep every activation the backward pass reads), selective "
                 "(recompute the attention cores' scores, probabilities and their dropout, as "
                 "Megatron-LM's --recompute-granularity selective), all (keep checkpoints, "
                 "recompute the rest in the backward pass), ops (torchtitan's op-level selective "
                 "checkpointing: attention and every other weight product kept, the rest "
                 "recomputed) or auto (the default: none, or selective, then all, where plan "
                 "finds nothing that fits without it)")
      ->check(CLI::IsMember({"none", "selective", "all", "ops", "auto"}));
  app.add_option("--zero", zero,
                 "train mode: 0 (every data-parallel replica keeps whole parameters, gradients "
                 "and optimizer state), 2 (ZeRO stage 2 as FSDP's SHARD_GRAD_OP: they are sharded "
                 "between steps, parameters gathered for the step), 3 (ZeRO stage 3 as FSDP's "
                 "FULL_SHARD: parameters gathered again for the backward pass, freed after each "
                 "use) or auto (the default: 0, or 2, then 3, where plan finds nothing that fits "
                 "without it; frontier shows 0 and 2)")
      ->check(CLI::IsMember({"0", "2", "3", "auto"}));
  app.add_option("--micro-batches", micro_batches,
                 "train mode: forward and backward passes per optimizer step, gradients "
                 "accumulated between them; --batch is the global batch, which they divide "
                 "(default: 1, or as plan sizes the step where nothing fits)")
      ->check(CLI::Range(1, 65536))
      ->each([this](const std::string&) { shape_pinned = true; });
  app.add_option("--pipeline-stages", pipeline_stages,
                 "train mode: cut the model into this many pipeline stages on consecutive blocks "
                 "of the GPUs, the micro-batches flowing through them (default: 1, or as plan "
                 "sizes the step where nothing fits)")
      ->check(CLI::Range(1, 4096))
      ->each([this](const std::string&) { shape_pinned = true; });
  app.add_option("--replicas", replicas,
                 "train mode: data parallelism across blocks: plan one block of GPUs/N GPUs and "
                 "repeat it N times over the batch, the gradients summed over every replica; 1 "
                 "plans all the GPUs at once; auto (the default): 1 up to 64 GPUs, above that "
                 "one replica per node (per K nodes with --pipeline-stages K)")
      ->check(CLI::IsMember({"auto"}) | CLI::Range(1, 65536))
      ->each([this](const std::string&) { shape_pinned = true; });
  app.add_option("--schedule", schedule,
                 "the pipeline schedule: 1f1b (default; PipeDream-Flush) or gpipe")
      ->check(CLI::IsMember({"gpipe", "1f1b"}));
  app.add_option("--virtual-stages", virtual_stages,
                 "train mode, with --pipeline-stages K: cut the model into K x V chunks, chunk j "
                 "on stage j % K, run in Megatron-LM's interleaved 1F1B schedule (a bubble V "
                 "times smaller, V times the messages); the micro-batches must be a multiple of "
                 "K (default 1)")
      ->check(CLI::Range(1, 64))
      ->each([this](const std::string&) { shape_pinned = true; });
  app.add_option("--calibration", calibration,
                 "the kernel model's parameters (JSON, docs/cost-model.md); defaults are built in");
  app.add_option("--costs", costs, "measured kernel times (JSON written by a launcher)");
  app.add_option("--dump-after", dump_after,
                 "print a stage's result and stop: import, train (the graph), strategies (each "
                 "operator's splits), groups (what the searches cut); plan and simulate also "
                 "plan (the plan file) and program (the compiled step, rank by rank)")
      ->check(CLI::IsMember({"import", "train", "strategies", "groups", "plan", "program"}));
}

std::vector<PipelineFlags> PipelineFlags::step_variants(bool zero3) const {
  std::vector<PipelineFlags> out;
  for (const char* r : {"none", "selective", "all"})
    for (const char* z : {"0", "2", "3"}) {
      if (!zero3 && zero == "auto" && std::string(z) == "3") continue;
      if ((recompute == "auto" ? std::string("none") : recompute) != r && recompute != "auto")
        continue;
      if (zero != "auto" && zero != z) continue;
      if (mode != "train" && (std::string(r) != "none" || std::string(z) != "0")) continue;
      PipelineFlags v = *this;
      v.recompute = r;
      v.zero = z;
      out.push_back(std::move(v));
    }
  if (out.empty()) out.push_back(*this);  // infer with a pinned train-only step: nothing to vary
  // Cheapest first: sharded state costs no compute, selective recomputation the attention
  // cores' scores, full recomputation a forward pass.
  auto cost = [](const PipelineFlags& f) {
    return f.recompute == "all" ? 2 : f.recompute == "selective" ? 1 : 0;
  };
  std::stable_sort(out.begin(), out.end(), [&](const PipelineFlags& a, const PipelineFlags& b) {
    return cost(a) < cost(b);
  });
  return out;
}

std::string PipelineFlags::step_label() const {
  std::string label;
  if (recompute == "all" || recompute == "selective") label = "recompute " + recompute;
  if (zero != "auto" && zero != "0") label += (label.empty() ? "" : ", ") + ("zero " + zero);
  return label;
}

std::vector<InputPath> PipelineFlags::inputs() const {
  std::vector<InputPath> in = {{model.model_path, "the model"},
                               {topology.topology, "the topology file"},
                               {costs, "the costs file"},
                               {calibration, "the calibration file"}};
  for (const std::string& file : tdl.files) in.push_back({file, "a TDL file"});
  return in;
}

Expected<void> check_outputs_after_import(const std::vector<OutputPath>& outputs,
                                          std::vector<InputPath> inputs, const ir::Graph& graph,
                                          const std::string& model_path) {
  std::set<std::string> seen;
  std::filesystem::path folder = std::filesystem::path(model_path).parent_path();
  for (ir::TensorId t = 0; t < graph.num_tensors(); ++t) {
    const ir::Tensor& tensor = graph.tensor(t);
    if (!tensor.external || !seen.insert(tensor.external->location).second) continue;
    inputs.push_back({(folder / tensor.external->location).string(), "the model's external data"});
  }
  if (seen.empty()) return ok();
  return check_outputs(outputs, inputs);
}

std::string strategies_text(const ir::Graph& graph, const analysis::GraphStrategies& strategies) {
  std::string out;
  for (ir::OpId id : graph.topo_order()) {
    const ir::Op& op = graph.op(id);
    out += fmt::format("{} ({}{}{}):", terminal_safe(op.name), op.domain,
                       op.domain.empty() ? "" : ".", terminal_safe(op.op_type));
    const analysis::OpStrategies* s = strategies.per_op[static_cast<size_t>(id)];
    if (!s || s->replicated || !s->analysis) {
      out += " kept whole (no TDL description)\n";
      continue;
    }
    std::string valid, invalid;
    for (const analysis::Strategy& st : s->analysis->strategies) {
      const char* kind = st.kind == analysis::Strategy::Kind::kOutput ? "" : " (reduction)";
      if (st.valid)
        valid += fmt::format(" {}{}", st.var, kind);
      else
        invalid += fmt::format("; not {}{}: {}", st.var, kind, st.invalid_reason);
    }
    out += (valid.empty() ? " no split" : valid) + invalid + "\n";
  }
  return out;
}

analysis::LoweringOptions PreparedModel::lowering_options() const {
  analysis::LoweringOptions o;
  o.compute = compute;
  o.measured = costs.get();
  o.compute.allow_tf32 = ir::uses_tf32(precision);
  if (framework == analysis::Framework::kTorchCompile) {
    // Inductor fuses FP8's amax and cast into the operand's producer.
    o.compute.fp8_cast_bytes = 3;
    o.compute.fp8_cast_launches = 0;
  }
  if (train && zero_stage == 3) o.regather_phases = &training.op_phase;
  return o;
}

Expected<std::unique_ptr<PreparedModel>> prepare_model(const PipelineFlags& flags, bool& dumped) {
  dumped = false;
  auto out = std::make_unique<PreparedModel>();
  out->source = flags.model.model_path;
  PLANNER_TRY_ASSIGN(importers::ImportOptions options, flags.model.import_options());
  out->micro_batches = flags.micro_batches;
  if (flags.micro_batches > 1) {
    if (flags.mode != "train")
      return make_error("--micro-batches {}: micro-batches are for training (--mode train)",
                        flags.micro_batches);
    if (!options.batch)
      return make_error(
          "--micro-batches {}: give the global batch with --batch (the micro-batches divide it)",
          flags.micro_batches);
    if (*options.batch % flags.micro_batches != 0)
      return make_error("--micro-batches {}: they do not divide the global batch {}",
                        flags.micro_batches, *options.batch);
    options.batch = *options.batch / flags.micro_batches;
  }
  out->micro_batch = options.batch.value_or(0);
  out->pipeline_stages = flags.pipeline_stages;
  out->replicas = flags.mode == "train" ? std::max(1, flags.pinned_replicas()) : 1;
  out->zero_stage = flags.mode == "train" ? flags.zero_stage() : 0;
  out->schedule = codegen::schedule_from_name(flags.schedule).value_or(codegen::Schedule::k1F1B);
  out->virtual_stages = flags.mode == "train" ? flags.virtual_stages : 1;
  if (flags.virtual_stages > 1) {
    if (flags.mode != "train")
      return make_error("--virtual-stages {}: virtual stages are for training (--mode train)",
                        flags.virtual_stages);
    if (flags.pipeline_stages < 2)
      return make_error(
          "--virtual-stages {}: give the pipeline stages they interleave (--pipeline-stages)",
          flags.virtual_stages);
    if (flags.micro_batches % flags.pipeline_stages != 0)
      return make_error(
          "--virtual-stages {}: --micro-batches {} is not a multiple of --pipeline-stages {} (the "
          "interleaved schedule runs the micro-batches in groups of one per stage)",
          flags.virtual_stages, flags.micro_batches, flags.pipeline_stages);
  }
  if (flags.pipeline_stages > 1 && flags.mode != "train")
    return make_error("--pipeline-stages {}: pipeline stages are for training (--mode train)",
                      flags.pipeline_stages);
  auto imported = importers::import_model(flags.model.model_path, options);
  if (!imported && flags.micro_batches > 1)
    return make_error("--micro-batches {} (passes of {} of the batch {}): {}", flags.micro_batches,
                      out->micro_batch, out->micro_batch * flags.micro_batches,
                      imported.error().message());
  PLANNER_TRY_ASSIGN(ir::Graph forward, std::move(imported));
  if ((flags.dump_after == "plan" || flags.dump_after == "program") && !flags.plans)
    return make_error("--dump-after {}: this command makes no plan (plan and simulate do)",
                      flags.dump_after);
  if (flags.dump_after == "import") {
    std::fputs(ir::to_text(forward).c_str(), stdout);
    dumped = true;
    return out;
  }
  if (flags.attention == "fused") {
    PLANNER_TRY_ASSIGN(analysis::AttentionFusion fusion,
                       analysis::fuse_attention(forward, out->source));
    out->fused_attention = true;
    // One line per reason: the first core's node and how many more.
    std::map<std::string, std::pair<std::string, int>> reasons;
    for (const auto& [node, why] : fusion.kept) {
      auto& [first, count] = reasons[why];
      if (count++ == 0) first = node;
    }
    for (const auto& [why, seen] : reasons) {
      const auto& [first, count] = seen;
      if (count == 1)
        spdlog::warn(
            "{}: --attention fused: the attention core at node '{}' stays materialized "
            "({})",
            out->source, first, why);
      else
        spdlog::warn(
            "{}: --attention fused: {} attention cores stay materialized ({}), the "
            "first at node '{}'",
            out->source, count, why, first);
    }
  }
  out->train = flags.mode == "train";
  out->precision = ir::precision_from_name(flags.precision).value_or(ir::Precision::kFp32);
  if (out->train) {
    analysis::TrainingOptions t;
    t.optimizer = flags.optimizer == "adam"       ? analysis::Optimizer::kAdam
                  : flags.optimizer == "momentum" ? analysis::Optimizer::kMomentum
                                                  : analysis::Optimizer::kSgd;
    t.learning_rate = flags.learning_rate;
    t.recompute =
        analysis::recompute_from_name(flags.recompute).value_or(analysis::Recompute::kNone);
    const bool pipelined = flags.pipelined_gradients.value_or(flags.pipeline_stages > 1);
    t.sum_parameter_parts_once = pipelined;
    t.copy_tied_embeddings = pipelined;
    if (flags.virtual_stages > 1 && flags.pipeline_stages > 1)
      t.checkpoint_runs = flags.pipeline_stages * flags.virtual_stages;
    out->pipelined_gradients = pipelined;
    out->recompute = t.recompute;
    PLANNER_TRY_ASSIGN(out->training, analysis::build_training_graph(forward, t, out->source));
    out->graph = out->training.graph;
  } else {
    out->graph = std::move(forward);
  }
  out->framework =
      analysis::framework_from_name(flags.framework).value_or(analysis::Framework::kNone);
  // Megatron-LM's --fp16 keeps, accumulates and all-reduces parameter gradients in fp16 (its
  // --accumulate-allreduce-grads-in-fp32 is off by default, and forced on only for bf16).
  const bool half_gradients = out->train && out->framework == analysis::Framework::kMegatron &&
                              out->precision == ir::Precision::kFp16 && out->zero_stage == 0;
  analysis::apply_precision(out->graph, out->train ? &out->training : nullptr, out->precision,
                            half_gradients);
  analysis::fuse_kernels(out->graph, out->train ? &out->training : nullptr, out->framework);
  if (flags.dump_after == "train") {
    std::fputs(ir::to_text(out->graph).c_str(), stdout);
    dumped = true;
    return out;
  }
  PLANNER_TRY_ASSIGN(tdl::Library library, flags.tdl.load());
  out->library = std::make_unique<tdl::Library>(std::move(library));
  out->cache = std::make_unique<analysis::StrategyCache>(*out->library);
  PLANNER_TRY_ASSIGN(out->strategies,
                     analysis::analyze_graph(*out->cache, out->graph, out->source));
  if (flags.dump_after == "strategies") {
    std::fputs(strategies_text(out->graph, out->strategies).c_str(), stdout);
    dumped = true;
    return out;
  }
  PLANNER_TRY_ASSIGN(importers::Topology topology, flags.topology.resolve());
  if (topology.num_devices() % flags.pipeline_stages != 0)
    return make_error("--pipeline-stages {}: the stages must divide the {} GPUs",
                      flags.pipeline_stages, topology.num_devices());
  out->topology.emplace(std::move(topology));
  if (!flags.calibration.empty()) {
    PLANNER_TRY_ASSIGN(out->compute, analysis::load_calibration(flags.calibration));
  }
  if (!flags.costs.empty()) {
    PLANNER_TRY_ASSIGN(analysis::MeasuredCosts costs, analysis::MeasuredCosts::load(flags.costs));
    out->costs = std::make_unique<analysis::MeasuredCosts>(std::move(costs));
  }
  out->lowering = std::make_unique<analysis::Lowering>(out->graph, out->strategies, *out->topology,
                                                       out->lowering_options());
  out->metrics_cache = std::make_unique<PreparedModel::MetricsCache>();
  if (flags.dump_after == "groups") {
    PLANNER_TRY_ASSIGN(
        search::GroupSpace space,
        search::GroupSpace::create(*out->lowering, out->train ? &out->training : nullptr));
    for (int i = 0; i < space.num_groups(); ++i) {
      std::string vars;
      for (const auto& [var, extent] : space.vars(i)) vars += fmt::format(" {}={}", var, extent);
      std::printf("group %d: %s, %zu operator%s;%s\n", i,
                  terminal_safe(out->graph.op(space.leader(i)).name).c_str(),
                  space.members(i).size(), space.members(i).size() == 1 ? "" : "s",
                  vars.empty() ? " nothing to split" : vars.c_str());
    }
    dumped = true;
  }
  return out;
}

}  // namespace planner::cli
