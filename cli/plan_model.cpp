// The model behind a plan, and named searches.
#include "cli/plan_model.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include <map>
#include <mutex>
#include "analysis/lowering.h"
#include "cli/plan_options.h"
#include "codegen/micro_batch.h"
#include "codegen/partition.h"
#include "codegen/program_simulation.h"
#include "codegen/rank_classes.h"
#include "search/pipeline.h"
#include "search/replicas.h"
#include "search/search.h"
#include "support/input_file.h"
#include "support/sha256.h"

namespace planner::cli {

namespace {

// The cluster flags that rebuild the topology `plan` names: `topology_arg` (--topology) when
// given, else the built-in preset (or its first N GPUs) or the default H100 cluster.
Expected<TopologyFlags> plan_topology(const search::Plan& plan, const std::string& topology_arg) {
  TopologyFlags t;
  const int n = plan.topology.num_devices;
  const std::string& name = plan.topology.name;
  t.gpus = n;
  if (!topology_arg.empty()) {
    t.topology = topology_arg;
    return t;
  }
  if (name == fmt::format("h100x{}", n)) return t;
  std::string base = name;
  const std::string suffix = fmt::format("-first-{}", n);
  if (base.size() > suffix.size() && base.ends_with(suffix))
    base.resize(base.size() - suffix.size());
  for (const importers::PresetInfo& p : importers::topology_presets())
    if (p.name == base) {
      t.topology = base;
      return t;
    }
  return make_error(
      "the plan was made for topology '{}', which is not built in: name its file with "
      "--topology FILE",
      name);
}

}  // namespace

Expected<std::unique_ptr<PreparedModel>> prepare_for_plan(
    const search::Plan& plan, const std::string& plan_path, const ModelFlags& model,
    const std::string& optimizer, const std::string& costs, const std::string& calibration,
    const std::string& topology) {
  PipelineFlags flags;
  flags.model = model;
  flags.costs = costs;
  flags.calibration = calibration;
  flags.mode = plan.mode;
  flags.optimizer = optimizer;
  PLANNER_TRY_ASSIGN(flags.topology, plan_topology(plan, topology));
  PLANNER_TRY(apply_plan_options(plan, plan_path, flags));
  PLANNER_TRY_ASSIGN(std::string sha,
                     sha256_file(model.model_path, kMaxModelFileBytes, "model file"));
  if (sha != plan.model.sha256)
    return make_error("{}: the plan is for another model file (sha256 {} in the plan, {} here)",
                      model.model_path, plan.model.sha256.substr(0, 12), sha.substr(0, 12));
  bool dumped = false;
  PLANNER_TRY_ASSIGN(auto prepared, prepare_model(flags, dumped));
  if (prepared->topology->name() != plan.topology.name)
    return make_error("{}: the plan was made for topology '{}', not '{}'", topology,
                      plan.topology.name, prepared->topology->name());
  const ir::Graph& g = prepared->graph;
  if (static_cast<int>(plan.ops.size()) != g.num_ops())
    return make_error(
        "{}: the plan has {} operators, the {} graph {} (check --mode, --optimizer and the batch)",
        model.model_path, plan.ops.size(), plan.mode, g.num_ops());
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    const ir::Op& op = g.op(id);
    const search::PlanOp& p = plan.ops[static_cast<size_t>(id)];
    if (p.name != op.name || p.op_type != op.op_type || p.domain != op.domain)
      return make_error("{}: plan operator {} is '{}' ({}), the model's is '{}' ({})",
                        model.model_path, id, p.name, p.op_type, op.name, op.op_type);
  }
  if (static_cast<int>(plan.tensors.size()) != g.num_tensors())
    return make_error("{}: the plan has {} tensors, the model {}", model.model_path,
                      plan.tensors.size(), g.num_tensors());
  for (ir::TensorId t = 0; t < g.num_tensors(); ++t) {
    const ir::Tensor& tensor = g.tensor(t);
    const search::PlanTensor& p = plan.tensors[static_cast<size_t>(t)];
    if (p.name != tensor.name || p.shape != tensor.shape)
      return make_error(
          "{}: plan tensor '{}' {} does not match the model's '{}' {} (check --batch and --shrink)",
          model.model_path, p.name, ir::shape_to_string(p.shape), tensor.name,
          ir::shape_to_string(tensor.shape));
  }
  return prepared;
}

std::string plan_precision(const search::Plan& plan) {
  const auto& o = plan.search.options;
  if (o.is_object() && o.contains("precision") && o["precision"].is_string())
    return o["precision"].get<std::string>();
  return "fp32";
}

Expected<void> check_plan_precision(const search::Plan& plan, const std::string& plan_path,
                                    const std::string& requested) {
  const std::string recorded = plan_precision(plan);
  if (requested.empty() || requested == recorded) return ok();
  return make_error(
      "{}: the plan was made for --precision {}, not {} (plan again with --precision {})",
      plan_path, recorded, requested, requested);
}

std::vector<analysis::OpConfig> plan_configs(const search::Plan& plan) {
  std::vector<analysis::OpConfig> out;
  for (const search::PlanOp& op : plan.ops) out.push_back(op.config);
  return out;
}

namespace {

// One pass of the step: partitioned, ordered by its schedule, checked to run to the end.
// `alike_once`: for pricing only, alike ranks keep one representative's steps
// (codegen/rank_classes.h).
Expected<codegen::Programs> compile_pass(const PreparedModel& m,
                                         const std::vector<analysis::OpConfig>& configs,
                                         int num_ranks, int k, bool alike_once = false) {
  // Replicas fetch inside themselves: the two replicas priced (replica_sets) and the whole
  // cluster's step compiled from their plan alike.
  codegen::PartitionOptions options;
  auto set = m.replica_sets.find(k);
  const int copies = set != m.replica_sets.end() ? 2 : m.replicas;
  if (copies > 1 && num_ranks % (copies * k) == 0) {
    const search::ReplicaLayout layout{num_ranks / copies, copies, k};
    for (int r = 0; r < num_ranks; ++r) {
      const auto [copy, inner] = layout.locate(r);
      options.replicas.replica.push_back(copy);
      options.replicas.inner.push_back(inner);
    }
  }
  options.values = !alike_once;  // priced only: no constant's bytes
  auto p = codegen::partition(*m.lowering, configs, num_ranks, m.train, options);
  if (!p) return p.error().with_context(m.source);
  p->gather_parameters_late = m.train && m.zero_stage == 3;
  // Megatron-LM's data-parallel gradients wait for the backward pass; sharded state (ZeRO 2 and
  // 3, as DeepSpeed and FSDP run it) reduces each gradient as soon as it is made and frees it.
  p->reduce_gradients_after_backward =
      m.train && m.framework == analysis::Framework::kMegatron && m.zero_stage == 0;
  if (set != m.replica_sets.end())
    p->replica_set = set->second;
  else if (!m.replica_sets.empty())
    return make_error("{}: no replica layout for {} pipeline stages", m.source, k);
  if (alike_once && num_ranks <= m.topology->num_devices()) {
    auto classes = codegen::rank_classes(*p, *m.topology);
    if (!classes) return classes.error().with_context(m.source);
    codegen::keep_representatives(*p, std::move(*classes));
  }
  if (num_ranks <= m.topology->num_devices()) {
    auto ordered =
        codegen::order_by_schedule(*p, m.graph, *m.topology, m.lowering->compute_model());
    if (!ordered) return ordered.error().with_context(m.source);
  }
  p->precision = m.precision;
  // A launcher runs each rank's steps in order: they must not wait on each other for ever.
  if (auto runs = codegen::check_runs(*p); !runs) return runs.error().with_context(m.source);
  return p;
}

// `pass` (compile_pass) repeated `passes` times.
Expected<codegen::Programs> repeat_pass(const PreparedModel& m, const codegen::Programs& pass,
                                        const std::vector<analysis::OpConfig>& configs,
                                        int num_ranks, int passes, int k) {
  if (!m.train || passes <= 1) return pass;
  // One micro-batch's step, ordered by its schedule, repeated (micro_batch.h): each pass in the
  // order the lowering priced; passes one after the other, or, where the plan sits on pipeline
  // stages, in the pipeline schedule.
  codegen::MicroBatchOptions o;
  o.micro_batches = passes;
  o.micro_batch = m.micro_batch;
  if (search::on_stage_blocks(configs, num_ranks, k)) {
    o.schedule = m.schedule;
    o.stages = k;
    o.rank_stage = search::rank_stages(num_ranks, k);
    if (m.virtual_stages > 1) {
      o.virtual_stages = m.virtual_stages;
      auto chunks =
          search::op_chunks(m.graph, &m.training, configs, num_ranks, k, m.virtual_stages);
      if (!chunks) return chunks.error().with_context(m.source);
      o.op_chunk = std::move(*chunks);
    }
  }
  auto whole = codegen::unroll_micro_batches(pass, m.training, o);
  if (!whole && o.schedule == codegen::Schedule::k1F1B) {
    // 1F1B needs every message between two ranks in the same order on both sides; a plan
    // whose later stage reads an earlier stage's tensor in its backward pass (a tied weight
    // split differently there) does not pair up in it. GPipe always does.
    o.schedule = codegen::Schedule::kGPipe;
    auto gpipe = codegen::unroll_micro_batches(pass, m.training, o);
    if (gpipe) return gpipe;
  }
  if (!whole) return whole.error().with_context(m.source);
  return whole;
}

}  // namespace

Expected<codegen::Programs> compile_programs(const PreparedModel& m,
                                             const std::vector<analysis::OpConfig>& configs,
                                             int num_ranks, int micro_batches, int stages,
                                             bool priced_only) {
  const int k = stages > 0 ? stages : m.pipeline_stages;
  PLANNER_TRY_ASSIGN(codegen::Programs pass, compile_pass(m, configs, num_ranks, k, priced_only));
  const int passes = micro_batches > 0 ? micro_batches : m.micro_batches;
  return repeat_pass(m, pass, configs, num_ranks, passes, k);
}

Expected<codegen::ProgramCost> price_programs(const PreparedModel& m,
                                              const codegen::Programs& programs,
                                              codegen::ProgramTasks* tasks,
                                              analysis::Timeline* timeline) {
  analysis::LoweringOptions o = m.lowering_options();
  analysis::ComputeCostModel compute(o.compute, o.measured);
  auto cost = codegen::simulate_programs(programs, m.graph, *m.topology, compute, tasks, timeline);
  if (!cost) return cost.error().with_context(m.source);
  return cost;
}

Expected<SimulatedProgram> simulate_plan(const PreparedModel& m,
                                         const std::vector<analysis::OpConfig>& configs,
                                         int stages) {
  SimulatedProgram out;
  PLANNER_TRY_ASSIGN(out.programs,
                     compile_programs(m, configs, m.topology->num_devices(), 0, stages));
  PLANNER_TRY_ASSIGN(out.cost, price_programs(m, out.programs, &out.tasks, &out.timeline));
  return out;
}

Expected<search::PlanMetrics> program_metrics(const PreparedModel& m,
                                              const std::vector<analysis::OpConfig>& configs,
                                              int stages) {
  const int k = stages > 0 ? stages : m.pipeline_stages;
  PreparedModel::MetricsCache* cache = m.metrics_cache.get();
  std::string key;
  for (const analysis::OpConfig& c : configs) key += c.to_string() + ';';
  key += std::to_string(k);
  if (cache) {
    std::lock_guard<std::mutex> lock(cache->mutex);
    auto it = cache->metrics.find(key);
    if (it != cache->metrics.end()) return it->second;
  }
  search::PlanMetrics out;
  const int n = m.topology->num_devices();
  const bool pipelined = search::on_stage_blocks(configs, n, k);
  // Virtual stages run the passes in groups of one per stage: the step grows by a group at a
  // time (2K and 3K passes simulated, each group after the third adding what the third did).
  const int group = pipelined && m.virtual_stages > 1 ? k : 1;
  const int fewer = group > 1 ? 2 * k : k + 1, more_passes = group > 1 ? 3 * k : k + 2;
  if (m.train && pipelined && m.micro_batches > more_passes) {
    // Once every stage has a pass in flight the schedule repeats: the step of M passes is the
    // one of K + 2 plus M - K - 2 times what the last pass added, in time. In memory, 1F1B holds
    // at most K passes' activations on a stage whatever M is (its peak is the steady state's,
    // reached by K + 1 passes, plus the model inputs the compiled step holds for every pass:
    // codegen::extended_peak_bytes; tests/codegen/micro_batch_test.cpp "pipeline: 1F1B holds
    // fewer passes' activations" holds that against whole programs); GPipe keeps every pass's
    // activations until the backward passes start, so its peak grows by what the last pass added.
    codegen::ProgramCost c[2];
    bool one_f_one_b = true;
    int64_t steady = 0;
    PLANNER_TRY_ASSIGN(codegen::Programs pass, compile_pass(m, configs, n, k, true));
    for (int i = 0; i < 2; ++i) {
      PLANNER_TRY_ASSIGN(auto programs,
                         repeat_pass(m, pass, configs, n, i == 0 ? fewer : more_passes, k));
      one_f_one_b = one_f_one_b && programs.schedule == "1f1b";
      PLANNER_TRY_ASSIGN(c[i], price_programs(m, programs, nullptr, nullptr));
      if (i == 1)
        steady = codegen::extended_peak_bytes(programs, c[i].rank_peak_memory_bytes, m.graph,
                                              more_passes, m.micro_batches);
    }
    const double more = static_cast<double>(m.micro_batches - more_passes) / group;
    out.step_time_s = c[1].step_time_s + more * (c[1].step_time_s - c[0].step_time_s);
    out.peak_memory_bytes =
        one_f_one_b ? std::max(c[0].peak_memory_bytes, steady)
                    : c[1].peak_memory_bytes +
                          static_cast<int64_t>(more) *
                              std::max<int64_t>(0, c[1].peak_memory_bytes - c[0].peak_memory_bytes);
    out.comm_bytes =
        static_cast<int64_t>(c[1].comm_bytes + more * (c[1].comm_bytes - c[0].comm_bytes));
  } else if (m.train && !pipelined && m.micro_batches > kSimulatedPasses) {
    // Passes after the first two repeat the same steps on the same buffers' lifetimes: the
    // step of M passes is the one of three plus M - 3 times what the third added (the peak is
    // the three passes' peak). tests/codegen/micro_batch_test.cpp holds this against the
    // whole program.
    codegen::ProgramCost c[2];
    int64_t peak = 0;
    PLANNER_TRY_ASSIGN(codegen::Programs pass, compile_pass(m, configs, n, k, true));
    for (int i = 0; i < 2; ++i) {
      PLANNER_TRY_ASSIGN(auto programs,
                         repeat_pass(m, pass, configs, n, kSimulatedPasses - 1 + i, k));
      PLANNER_TRY_ASSIGN(c[i], price_programs(m, programs, nullptr, nullptr));
      if (i == 1)
        peak = codegen::extended_peak_bytes(programs, c[i].rank_peak_memory_bytes, m.graph,
                                            kSimulatedPasses, m.micro_batches);
    }
    const double more = m.micro_batches - kSimulatedPasses;
    out.step_time_s = c[1].step_time_s + more * (c[1].step_time_s - c[0].step_time_s);
    out.peak_memory_bytes = peak;
    out.comm_bytes =
        static_cast<int64_t>(c[1].comm_bytes + more * (c[1].comm_bytes - c[0].comm_bytes));
  } else {
    PLANNER_TRY_ASSIGN(codegen::Programs pass, compile_pass(m, configs, n, k, true));
    PLANNER_TRY_ASSIGN(auto programs, repeat_pass(m, pass, configs, n, m.micro_batches, k));
    PLANNER_TRY_ASSIGN(codegen::ProgramCost c, price_programs(m, programs, nullptr, nullptr));
    out = {c.step_time_s, c.peak_memory_bytes, static_cast<int64_t>(c.comm_bytes)};
  }
  if (cache) {
    std::lock_guard<std::mutex> lock(cache->mutex);
    cache->metrics.emplace(std::move(key), out);
  }
  return out;
}

Expected<PeakMemory> peak_memory(const PreparedModel& m,
                                 const std::vector<analysis::OpConfig>& configs, int stages,
                                 int64_t limit) {
  const int k = stages > 0 ? stages : m.pipeline_stages;
  const int n = m.topology->num_devices();
  if (m.train && search::on_stage_blocks(configs, n, k) && m.micro_batches > k + 2) {
    PLANNER_TRY_ASSIGN(codegen::Programs pass, compile_pass(m, configs, n, k, true));
    // Half as many passes first: a plan far over the limit is already over it there (with
    // virtual stages, groups of one pass per stage).
    const bool grouped = m.virtual_stages > 1;
    for (int passes : {grouped ? k : std::max(2, (k + 1) / 2), grouped ? 2 * k : k + 1}) {
      if (passes > m.micro_batches) break;
      PLANNER_TRY_ASSIGN(auto programs, repeat_pass(m, pass, configs, n, passes, k));
      PLANNER_TRY_ASSIGN(codegen::ProgramCost fewer, price_programs(m, programs, nullptr, nullptr));
      if (fewer.peak_memory_bytes > limit) return PeakMemory{fewer.peak_memory_bytes, true};
    }
  }
  PLANNER_TRY_ASSIGN(search::PlanMetrics all, program_metrics(m, configs, stages));
  return PeakMemory{all.peak_memory_bytes, false};
}

std::vector<analysis::OpConfig> single_device_configs(const PreparedModel& m) {
  return std::vector<analysis::OpConfig>(static_cast<size_t>(m.graph.num_ops()),
                                         analysis::OpConfig::single(0));
}

}  // namespace planner::cli
