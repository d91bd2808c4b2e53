// Searching a prepared model and building its plan.
#include "cli/search_session.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/plan_model.h"
#include "search/pipeline.h"
#include "search/plan_builder.h"
#include "support/sha256.h"
#include "support/units.h"

#include "support/parallel.h"

namespace planner::cli {

namespace {

// -v: how long each stage of planning took.
class StageClock {
 public:
  void done(std::string_view stage) {
    const auto now = std::chrono::steady_clock::now();
    spdlog::debug("{}: {:.2f} s", stage, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// The plan file's header: the model, the mode, the search and every option that rebuilds the
// step (compile, verify, explain and diff read them back: plan_model.h, prepare_for_plan).
Expected<search::PlanHeader> plan_header(const PreparedModel& m, const PipelineFlags& pipeline,
                                         const search::SearchInfo& info,
                                         const search::SearchOptions& options,
                                         const nlohmann::ordered_json& search_options,
                                         const ReplicaModels* rep) {
  search::PlanHeader header;
  header.model.name = m.graph.name.empty() ? "model" : m.graph.name;
  auto hash = sha256_file(m.source, kMaxModelFileBytes, "model file");
  if (!hash) return hash.error();
  header.model.sha256 = *hash;
  int64_t forward = 0;
  if (m.train) {
    for (analysis::Phase p : m.training.op_phase) forward += p == analysis::Phase::kForward;
  } else {
    forward = m.graph.num_ops();
  }
  header.model.num_nodes = forward;
  header.mode = pipeline.mode;
  header.search.algorithm = std::string(info.name);
  header.search.seed = options.seed;
  nlohmann::ordered_json o = search_options;
  o["budget_s"] = options.budget_s;
  o["memory_limit_bytes"] = options.memory_limit;
  if (m.train) o["optimizer"] = pipeline.optimizer;
  if (m.train && (pipeline.recompute == "all" || pipeline.recompute == "selective" ||
                  pipeline.recompute == "ops"))
    o["recompute"] = pipeline.recompute;
  if (m.train && pipeline.zero_stage() != 0) o["zero"] = pipeline.zero_stage();
  if (m.precision != ir::Precision::kFp32)
    o["precision"] = std::string(ir::precision_name(m.precision));
  if (m.framework != analysis::Framework::kNone)
    o["framework"] = std::string(analysis::framework_name(m.framework));
  if (m.fused_attention) o["attention"] = "fused";
  if (pipeline.model.batch) o["batch"] = *pipeline.model.batch;
  if (m.micro_batches > 1) o["micro_batches"] = m.micro_batches;
  if (m.pipeline_stages > 1) {
    o["pipeline_stages"] = m.pipeline_stages;
    o["schedule"] = codegen::schedule_name(m.schedule);
    if (m.virtual_stages > 1) o["virtual_stages"] = m.virtual_stages;
    // Stages the search chose (megatron-3d) on a graph built for one: rebuilt as planned.
    if (m.train && !m.pipelined_gradients) o["pipelined_gradients"] = false;
  }
  if (rep) o["replicas"] = rep->replicas;
  if (!pipeline.model.dims.empty()) {
    nlohmann::ordered_json dims = nlohmann::ordered_json::object();
    for (const std::string& d : pipeline.model.dims) {
      auto eq = d.find('=');
      if (eq == std::string::npos) continue;
      try {
        dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
      } catch (...) {
      }
    }
    o["dims"] = std::move(dims);
  }
  if (!pipeline.model.shrink.empty()) {
    // The map as the importer applied it (sorted, one entry per dimension).
    auto import = pipeline.model.import_options();
    if (import) {
      nlohmann::ordered_json shrink = nlohmann::ordered_json::object();
      for (const auto& [from, to] : import->shrink) shrink[std::to_string(from)] = to;
      o["shrink"] = std::move(shrink);
    }
  }
  header.search.options = std::move(o);
  return header;
}

// The cluster's layouts of a replicated plan (`configs`: one block's, `k` stages) from one
// replica's and two's: lowering the whole cluster's step costs what the replicas save. Layouts
// the replicas do not repeat (a tensor replicated in an order of its reader's) come from the
// cluster's configs, those tensors' operators alone.
Expected<std::vector<analysis::Sharding>> cluster_layouts(
    const SearchSession& session, const std::vector<analysis::OpConfig>& configs, int k) {
  const ReplicaModels& rep = *session.replicas;
  const PreparedModel& m = *session.model;
  auto one = rep.one->lowering->tensor_shardings(rep.replicate(configs, 1, k));
  if (!one) return one.error().with_context(m.source);
  auto two = rep.two->lowering->tensor_shardings(rep.replicate(configs, 2, k));
  if (!two) return two.error().with_context(m.source);
  std::vector<char> missing;
  auto all = search::replicate_layouts(*one, *two, {rep.block, rep.replicas, k}, m.graph, &missing);
  if (!all) return all.error().with_context(m.source);
  if (!missing.empty()) {
    auto direct =
        session.lowering->tensor_shardings(rep.replicate(configs, rep.replicas, k), &missing);
    if (!direct) return direct.error().with_context(m.source);
    for (size_t t = 0; t < missing.size(); ++t)
      if (missing[t]) (*all)[t] = std::move((*direct)[t]);
  }
  return all;
}

// Data parallelism a search's plan may give way to: over all the GPUs (sharded, as fsdp, with
// sharded state) or, unless --all-gpus or replicas, also over the first blocks of fewer the
// searches' cuts make; with --min-gpus over the GPUs the search settled on.
struct DataParallelCandidates {
  std::vector<std::vector<analysis::OpConfig>> configs;
  std::vector<int> gpus;
};
Expected<DataParallelCandidates> data_parallel_candidates(
    const SearchSession& session, const search::SearchOptions& options,
    const nlohmann::ordered_json& result_options, const std::vector<analysis::OpConfig>& dp,
    bool sharded) {
  const search::SearchContext context = session.context();
  const int n = context.lowering.topology().num_devices();
  std::vector<int> blocks = options.fewer_devices && !sharded && !session.replicas
                                ? search::device_blocks(n)
                                : std::vector<int>{n};
  if (options.min_gpus && result_options.contains("gpus_used") &&
      result_options["gpus_used"].is_number_integer())
    blocks = {result_options["gpus_used"].get<int>()};
  std::optional<search::SearchResult> fsdp;
  if (sharded) {
    PLANNER_TRY_ASSIGN(fsdp, search::run_fsdp(context, options));
  }
  DataParallelCandidates out;
  for (int b : blocks) {
    auto c =
        b == n ? Expected<std::vector<analysis::OpConfig>>(fsdp ? fsdp->configs : dp)
               : analysis::baseline_configs(context.lowering, analysis::Baseline::kDataParallel, b);
    if (!c) continue;
    out.configs.push_back(std::move(*c));
    out.gpus.push_back(b);
  }
  return out;
}

// Whether a pipelined plan (`configs`, the searched block's) asked to run 1F1B compiles to
// GPipe (compile_programs: 1F1B cannot pair its messages).
Expected<bool> falls_back_to_gpipe(const SearchSession& session,
                                   const std::vector<analysis::OpConfig>& configs) {
  const PreparedModel& m = *session.model;
  const ReplicaModels* rep = session.replicas.get();
  const int n = session.context().lowering.topology().num_devices();
  if (!m.train || m.micro_batches <= 1 || m.schedule != codegen::Schedule::k1F1B ||
      !search::on_stage_blocks(configs, n, m.pipeline_stages))
    return false;
  const int passes = m.virtual_stages > 1 ? std::min(m.micro_batches, 2 * m.pipeline_stages)
                                          : std::min(m.micro_batches, m.pipeline_stages + 1);
  PLANNER_TRY_ASSIGN(
      codegen::Programs probe,
      rep ? compile_programs(*rep->two, rep->replicate(configs, 2, m.pipeline_stages),
                             2 * rep->block, passes, m.pipeline_stages, true)
          : compile_programs(m, configs, n, passes, 0, true));
  return probe.schedule != "1f1b";
}

}  // namespace

// Data parallelism keeps every parameter and its optimizer state on every GPU: their bytes.
int64_t replicated_state_bytes(const ir::Graph& g, bool parameters_only) {
  int64_t state = 0;
  for (ir::TensorId t = 0; t < g.num_tensors(); ++t) {
    const ir::Tensor& tensor = g.tensor(t);
    if (tensor.role == ir::TensorRole::kParameter ||
        (!parameters_only && tensor.role == ir::TensorRole::kOptimizerState))
      state += tensor.num_bytes();
  }
  return state;
}

void SearchFlags::add_to(CLI::App& app, bool with_search, bool with_seed) {
  if (with_search) {
    std::string names;
    for (const auto& s : search::searches())
      names += (names.empty() ? "" : "|") + std::string(s.name);
    app.add_option("--search", search, "the search: " + names + " (default " + search + ")");
  }
  if (with_seed) app.add_option("--seed", seed, "random seed (the same seed gives the same plan)");
  app.add_option("--budget", budget_s, "seconds a search may take (default 60; 0: no bound)")
      ->check(budget_seconds());
  app.add_option("--memory-limit", memory_limit,
                 "memory per device a plan may use, e.g. 40GiB (default: the device's memory)");
  app.add_option("--frontier-points", frontier_points,
                 "most points the frontier keeps (default 10)")
      ->check(CLI::Range(2, 64));
  app.add_flag("--no-progress", no_progress, "never draw the progress line");
  app.add_option("--max-proposals", max_proposals,
                 "mcmc: stop after this many proposals (reproducible whatever the machine's speed)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--objective", objective,
                 "dp: minimise time (compute and communication; the default) or comm (bytes sent, "
                 "as Tofu and SoyBean)")
      ->check(CLI::IsMember({"time", "comm"}));
  app.add_flag("--min-gpus", min_gpus,
               "with --search frontier: use the fewest GPUs (1, 2, 4, ...) on which a plan fits");
  app.add_flag("--all-gpus", all_gpus,
               "dp and frontier: use every GPU, even where a plan over fewer is predicted faster");
  app.add_option("--threads", threads,
                 "worker threads for dp and frontier, 1 to 256 (default: one per hardware thread; "
                 "the plan does not depend on it)")
      ->check(CLI::Range(1, kMaxThreads));
  app.add_flag("--sequence-parallel", sequence_parallel,
               "megatron, megatron-2d and megatron-3d: split the operators tensor parallelism "
               "leaves whole (norms, dropout, residual adds, embeddings) along the sequence, "
               "gathered before and reduce-scattered after each tensor-parallel block, as "
               "Megatron-LM's --sequence-parallel");
  app.add_option("--tensor-parallel", tensor_parallel,
                 "megatron, megatron-2d and megatron-3d: the tensor-parallel degree, over "
                 "consecutive GPUs (default: megatron a node's GPUs, megatron-2d and -3d each "
                 "degree that divides a node); more than a node's GPUs runs tensor parallelism "
                 "across nodes")
      ->check(CLI::Range(1, 65536));
  app.add_flag(
      "--no-fallback", no_fallback,
      "write the search's own plan even when data parallelism is faster under the simulator");
}

Expected<search::SearchOptions> SearchFlags::options(const importers::Topology& topology) const {
  search::SearchOptions o;
  o.seed = seed;
  o.budget_s = budget_s;
  o.frontier_points = frontier_points;
  o.min_gpus = min_gpus;
  o.fewer_devices = !all_gpus;
  o.max_proposals = max_proposals;
  o.threads = threads > 0 ? threads : default_threads();
  o.objective = objective == "comm" ? search::Objective::kCommBytes : search::Objective::kTime;
  o.sequence_parallel = sequence_parallel;
  o.tensor_parallel = tensor_parallel;
  if (!memory_limit.empty()) {
    auto bytes = parse_bytes(memory_limit);
    if (!bytes || *bytes <= 0)
      return make_error("--memory-limit: '{}' is not a size (e.g. 40GiB, 512MiB, 8e9)",
                        memory_limit);
    o.memory_limit = *bytes;
  } else {
    o.memory_limit = search::default_memory_limit(topology);
  }
  o.progress = terminal_progress(no_progress);
  return o;
}

std::function<void(double, std::string_view)> terminal_progress(bool disabled) {
  if (disabled || !isatty(STDERR_FILENO)) return {};
  return [](double fraction, std::string_view what) {
    std::fprintf(stderr, "\r\033[K[%3d%%] %.*s", static_cast<int>(fraction * 100 + 0.5),
                 static_cast<int>(what.size()), what.data());
    std::fflush(stderr);
  };
}

search::SearchContext SearchSession::context() const {
  if (replicas) {
    const PreparedModel& one = *replicas->one;
    return {*one.lowering, *replicas->space, one.train ? &one.training : nullptr};
  }
  return {*lowering, *space, model->train ? &model->training : nullptr};
}

Expected<SearchSession> open_session(const PipelineFlags& flags, bool& dumped) {
  SearchSession s;
  StageClock clock;
  PLANNER_TRY_ASSIGN(s.model, prepare_model(flags, dumped));
  if (dumped) return s;
  clock.done("the model prepared");
  s.lowering = s.model->lowering.get();
  const int replicas = flags.pinned_replicas() > 0 ? flags.pinned_replicas()
                                                   : auto_replicas(flags, *s.model->topology);
  if (replicas > 1) {
    PipelineFlags f = flags;
    f.replicas = std::to_string(replicas);
    s.model->replicas = replicas;
    PLANNER_TRY_ASSIGN(s.replicas, prepare_replicas(f, *s.model->topology));
    clock.done("one and two replicas prepared");
    return s;
  }
  auto space =
      search::GroupSpace::create(*s.lowering, s.model->train ? &s.model->training : nullptr,
                                 s.model->train && flags.zero_stage() >= 2);
  if (!space) return space.error().with_context(s.model->source);
  s.space = std::make_unique<search::GroupSpace>(std::move(*space));
  s.space->set_micro_batches(s.model->micro_batches);
  return s;
}

Expected<PlanOutcome> plan_model(const SearchSession& session, const PipelineFlags& pipeline,
                                 const SearchFlags& search_flags, bool stop_if_unfit) {
  const PreparedModel& m = *session.model;
  // What the searches plan: the model on all the GPUs, or one replica's block (--replicas),
  // whose plans are judged as the cluster's (two replicas, priced as all of them) and written
  // as the cluster's.
  const ReplicaModels* rep = session.replicas.get();
  const PreparedModel& planned = rep ? *rep->one : m;
  const importers::Topology& topology = *planned.topology;
  auto layout_stages = [&](const std::vector<analysis::OpConfig>& c, int stages) {
    const int k = stages > 0 ? stages : m.pipeline_stages;
    return search::on_stage_blocks(c, topology.num_devices(), k) ? k : 1;
  };
  auto judge_at = [&m, rep, &layout_stages](const std::vector<analysis::OpConfig>& c,
                                            int stages) -> Expected<search::PlanMetrics> {
    if (!rep) return program_metrics(m, c, stages);
    const int k = layout_stages(c, stages);
    return program_metrics(*rep->two, rep->replicate(c, 2, k), k);
  };
  auto to_cluster = [rep, &layout_stages](std::vector<analysis::OpConfig> c, int stages) {
    return rep ? rep->replicate(c, rep->replicas, layout_stages(c, stages)) : c;
  };
  PLANNER_TRY_ASSIGN(const search::SearchInfo* info, search::find_search(search_flags.search));
  // Megatron's layout flags mean nothing to the other searches: refused, not ignored.
  const bool megatron = std::string_view(info->name).starts_with("megatron");
  if (!megatron && search_flags.sequence_parallel)
    return make_error(
        "--sequence-parallel: only the megatron searches (megatron, megatron-2d, "
        "megatron-3d) lay out sequence parallelism, not --search {}",
        info->name);
  if (!megatron && search_flags.tensor_parallel > 0)
    return make_error(
        "--tensor-parallel: only the megatron searches (megatron, megatron-2d, "
        "megatron-3d) take a tensor-parallel degree, not --search {}",
        info->name);
  PLANNER_TRY_ASSIGN(search::SearchOptions options, search_flags.options(topology));
  options.virtual_stages = m.virtual_stages;
  // A replica is its block: GPUs a block leaves idle would idle in every replica.
  if (rep) options.fewer_devices = false;
  options.judge = [&judge_at](const std::vector<analysis::OpConfig>& c) { return judge_at(c, 0); };
  options.judge_stages = [&judge_at](const std::vector<analysis::OpConfig>& c, int stages) {
    return judge_at(c, stages);
  };
  PlanOutcome out;
  out.memory_limit = options.memory_limit;

  auto start = std::chrono::steady_clock::now();
  StageClock clock;
  // megatron-3d picks its own stage count, unless --pipeline-stages pins one (then it is
  // megatron-2d inside those stages).
  const bool picks_stages = info->name == "megatron-3d";
  if (picks_stages && m.pipeline_stages > 1) {
    PLANNER_TRY_ASSIGN(info, search::find_search("megatron-2d"));
  }
  auto result = picks_stages && m.pipeline_stages == 1
                    ? info->run(session.context(), options)
                    : search::run_pipelined(*info, session.context(), options, m.pipeline_stages);
  if (result && result->options.contains("pipeline_stages") &&
      result->options["pipeline_stages"].is_number_integer())
    session.model->pipeline_stages = result->options["pipeline_stages"].get<int>();
  if (options.progress) std::fprintf(stderr, "\r\033[K");
  if (!result) return result.error().with_context(m.source);
  out.search_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  clock.done(fmt::format("search {}", info->name));
  out.notes = result->notes;
  out.frontier = result->frontier;
  out.frontier_gpus = result->frontier_gpus;
  out.frontier_chosen = result->frontier_chosen;

  // Data parallelism holds every parameter and its optimizer state on every GPU; with sharded
  // state (--zero 2) still every parameter.
  const int zero = pipeline.zero_stage();
  const int64_t dp_at_least = zero == 0   ? replicated_state_bytes(m.graph)
                              : zero == 2 ? replicated_state_bytes(m.graph, true)
                                          : 0;
  if (stop_if_unfit && m.train && dp_at_least > options.memory_limit) {
    const int k = layout_stages(result->configs, 0);
    PLANNER_TRY_ASSIGN(
        const PeakMemory peak,
        rep ? peak_memory(*rep->two, rep->replicate(result->configs, 2, k), k, options.memory_limit)
            : peak_memory(m, result->configs, 0, options.memory_limit));
    if (peak.bytes > options.memory_limit) {
      out.plan.predicted.peak_memory_bytes = peak.bytes;
      out.peak_at_least = peak.at_least;
      out.fits = false;
      out.complete = false;
      return out;
    }
  }
  auto dp = search::run_data_parallel(session.context(), options);
  if (!dp) return dp.error().with_context(m.source);
  // Every figure a plan reports is its compiled step's, simulated (docs/codegen.md).
  auto dp_metrics = judge_at(dp->configs, 0);
  clock.done("data parallelism simulated");
  if (!dp_metrics) return dp_metrics.error();
  auto predicted = judge_at(result->configs, 0);
  if (!predicted) return predicted.error();
  clock.done("the plan simulated");
  std::vector<analysis::OpConfig> configs = std::move(result->configs);
  const bool is_baseline = info->name == "data-parallel" || info->name == "model-parallel" ||
                           info->name == "one-weird-trick" || info->name == "megatron" ||
                           picks_stages || info->name == "fsdp";
  // With sharded state pinned (--zero 2), the data parallelism a search falls back to shards it
  // too, over all the GPUs.
  const bool sharded = m.train && pipeline.zero_stage() >= 2;
  // --min-gpus with sharded state on fewer GPUs than all: no data parallelism to compare.
  const bool min_gpus_sharded = options.min_gpus && sharded &&
                                result->options.contains("gpus_used") &&
                                result->options["gpus_used"].is_number_integer() &&
                                result->options["gpus_used"].get<int>() < topology.num_devices();
  // Pinned pipeline stages: no fallback to a plan without them.
  if (!is_baseline && !search_flags.no_fallback && !min_gpus_sharded && m.pipeline_stages == 1) {
    // Data parallelism, over all the GPUs or (unless --all-gpus) the first blocks of fewer the
    // searches' cuts make: the fastest that fits replaces a slower search result.
    const int n = topology.num_devices();
    PLANNER_TRY_ASSIGN(
        DataParallelCandidates cands,
        data_parallel_candidates(session, options, result->options, dp->configs, sharded));
    std::vector<std::vector<analysis::OpConfig>>& dps = cands.configs;
    const std::vector<int>& dp_blocks = cands.gpus;
    std::vector<const std::vector<analysis::OpConfig>*> candidates;
    for (const auto& c : dps) candidates.push_back(&c);
    PLANNER_TRY_ASSIGN(search::Pick pick, search::pick_fastest(*planned.lowering, options,
                                                               options.memory_limit, candidates));
    std::vector<analysis::OpConfig> best_dp = std::move(dps[pick.index]);
    const search::PlanMetrics best_m = pick.metrics;
    const int best_n = dp_blocks[pick.index];
    if (predicted->step_time_s > best_m.step_time_s &&
        best_m.peak_memory_bytes <= options.memory_limit) {
      std::erase_if(out.notes, [](const std::string& s) { return s.starts_with("uses "); });
      result->options.erase("gpus_used");
      if (best_n < n) result->options["gpus_used"] = best_n;
      out.notes.push_back(
          fmt::format("the search's plan ({}) was slower than {}data parallelism{} ({}) under "
                      "the simulator: kept {}data parallelism",
                      format_seconds(predicted->step_time_s), sharded ? "sharded " : "",
                      best_n < n ? fmt::format(" over {} of the {} GPUs", best_n, n) : "",
                      format_seconds(best_m.step_time_s), sharded ? "sharded " : ""));
      configs = std::move(best_dp);
      predicted = best_m;
    }
  }

  // A pipelined plan that 1F1B cannot order runs GPipe (compile_programs): say so.
  PLANNER_TRY_ASSIGN(const bool gpipe, falls_back_to_gpipe(session, configs));
  out.gpipe_fallback = gpipe;
  if (gpipe)
    out.notes.push_back(
        "1F1B cannot order this plan's messages between stages (a later stage reads an "
        "earlier stage's tensor in its backward pass, as a tied weight split differently "
        "there): the compiled step runs its micro-batches in the GPipe schedule");
  PLANNER_TRY_ASSIGN(search::PlanHeader header,
                     plan_header(m, pipeline, *info, options, result->options, rep));
  std::optional<std::vector<analysis::Sharding>> layouts;
  if (rep) {
    const int k = layout_stages(configs, m.pipeline_stages);
    PLANNER_TRY_ASSIGN(layouts, cluster_layouts(session, configs, k));
    out.pair_configs = rep->replicate(configs, 2, k);
    configs = to_cluster(std::move(configs), m.pipeline_stages);
    out.notes.push_back(fmt::format(
        "{} data-parallel replicas of a plan for {} GPUs, gradients summed over all of them; "
        "figures from two replicas' compiled step, the all-reduces between them priced over all {} "
        "replicas",
        rep->replicas, rep->block, rep->replicas));
  } else {
    // The layouts alone (analysis/plan_layouts.cpp): the figures are the compiled step's.
    PLANNER_TRY_ASSIGN(layouts, session.lowering->tensor_shardings(configs));
  }
  auto plan =
      search::build_plan(*session.lowering, configs, m.train ? &m.training : nullptr,
                         std::move(header), {{"data_parallel", *dp_metrics}}, std::move(layouts));
  if (!plan) return plan.error().with_context(m.source);
  clock.done("the plan file's layouts");
  out.plan = std::move(*plan);
  out.plan.predicted = *predicted;
  out.configs = std::move(configs);
  out.fits = out.plan.predicted.peak_memory_bytes <= options.memory_limit;
  return out;
}

}  // namespace planner::cli
