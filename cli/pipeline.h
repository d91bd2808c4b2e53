// The front of the planner's pipeline, shared by the commands that plan or simulate:
// import -> (training graph) -> operator library -> strategies -> topology.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/cost_model.h"
#include "analysis/fusion.h"
#include "analysis/lowering.h"
#include "analysis/op_strategies.h"
#include "analysis/training_graph.h"
#include "cli/options.h"
#include "cli/tdl_flags.h"
#include "cli/topology_flags.h"
#include "codegen/pipeline_schedule.h"
#include "importers/topology.h"
#include "ir/graph.h"
#include "ir/precision.h"
#include "search/plan.h"
#include "support/output_file.h"
#include "tdl/library.h"

namespace planner::cli {

/// Flags of the pipeline's front: the model, the mode, the optimizer, the topology, the
/// operator library and measured costs.
struct PipelineFlags {
  ModelFlags model;
  TopologyFlags topology;
  TdlFlags tdl;
  std::string mode = "train";     ///< train | infer
  std::string optimizer = "sgd";  ///< sgd | momentum | adam
  /// The update operators' learning rate (analysis::TrainingOptions); no figure depends on it,
  /// so only `verify` sets it (--lr)
  double learning_rate = 0.01;
  std::string precision = "fp32";  ///< fp32 | tf32 | fp16 | bf16 (ir::Precision)
  /// none | torch | megatron | torch-compile: whose fused kernels the step is priced as
  /// (analysis/fusion.h)
  std::string framework = "none";
  /// materialized | fused: attention cores as the graph writes them, or each one
  /// ai.planner.Attention (analysis/fuse_attention.h)
  std::string attention = "materialized";
  /// none | all (analysis::Recompute) | auto: none, except that `plan` plans again with all
  /// when the plan without recomputation does not fit
  std::string recompute = "auto";
  /// ZeRO stage of the searches' space: "0" (replicated updates, as DDP), "2" (updates sharded
  /// over the devices that would replicate them: search::GroupSpace's shard_state), or "auto":
  /// 0, except that `plan` tries 2 where nothing fits and `frontier` shows both
  std::string zero = "auto";

  /// Train mode: forward and backward passes per optimizer step (--micro-batches), gradients
  /// accumulated between them (codegen/micro_batch.h); --batch is the global batch.
  int micro_batches = 1;
  /// Train mode: pipeline stages (--pipeline-stages, consecutive blocks of the GPUs,
  /// search/pipeline.h) and the order the micro-batches run through them (--schedule).
  int pipeline_stages = 1;
  /// Build the training graph for pipeline stages (a tied embedding copied onto the head's
  /// stage, parameter gradient parts summed once per step); unset: when pipeline_stages > 1.
  /// A plan whose search chose its stages (megatron-3d) records false (plan_options).
  std::optional<bool> pipelined_gradients;
  std::string schedule = "1f1b";
  /// Train mode: model chunks per pipeline stage (--virtual-stages; Megatron-LM's interleaved
  /// schedule, codegen/pipeline_schedule.h).
  int virtual_stages = 1;
  /// Train mode: data-parallel replicas of one plan for a block of the GPUs (--replicas,
  /// search/replicas.h): a count (1: the searches plan all the GPUs at once) or "auto"
  /// (cli/replicated_plan.h, auto_replicas).
  std::string replicas = "auto";
  /// --replicas as a count; 0 for auto.
  int pinned_replicas() const { return replicas == "auto" ? 0 : std::stoi(replicas); }

  /// The ZeRO stage a session is opened with ("auto" is 0).
  int zero_stage() const { return zero == "3" ? 3 : zero == "2" ? 2 : 0; }
  std::string costs;        ///< --costs FILE: measured kernel times
  std::string calibration;  ///< --calibration FILE: the kernel model's parameters
  std::string dump_after;   ///< --dump-after STAGE: print a stage's text form
  /// The command goes on to a plan and its compiled step (plan, simulate): --dump-after plan
  /// and program are its stages; other commands refuse them.
  bool plans = false;

  void add_to(CLI::App& app);
  /// The steps `plan` and `frontier` try where --recompute and --zero are auto, cheapest first:
  /// as given, then sharded state, then recomputation, then both (pinned flags stay pinned);
  /// --zero auto shards by ZeRO stage 2, then (`zero3`: plan) stage 3.
  std::vector<PipelineFlags> step_variants(bool zero3 = false) const;
  /// --micro-batches, --pipeline-stages, --virtual-stages or --replicas was given: `plan` keeps
  /// the step's shape as given (cli/step_sizing.h sizes it otherwise).
  bool shape_pinned = false;
  /// "recompute all, zero 2" and the like, for tables; "" for the plain step.
  std::string step_label() const;
  /// The files these flags read (model, topology file, TDL files, costs, calibration), for the
  /// output guard (support/output_file.h): no output may be one of them.
  std::vector<InputPath> inputs() const;
};

/// What the front of the pipeline produces. Members reference each other: keep it whole.
struct PreparedModel {
  ir::Graph graph;                   ///< the graph planned: forward, or one training step
  analysis::TrainingGraph training;  ///< set in train mode (graph is training.graph)
  bool train = false;
  analysis::Recompute recompute = analysis::Recompute::kNone;  ///< train mode: --recompute
  ir::Precision precision = ir::Precision::kFp32;  ///< --precision; tensors' dtypes follow it
  /// --framework: whose fused kernels the step is priced as (the graph's ops carry the marks)
  analysis::Framework framework = analysis::Framework::kNone;
  /// --attention fused: the attention cores fused before the training graph was built
  bool fused_attention = false;
  std::unique_ptr<tdl::Library> library;
  std::unique_ptr<analysis::StrategyCache> cache;
  analysis::GraphStrategies strategies;
  std::optional<importers::Topology> topology;     ///< set once resolved
  std::unique_ptr<analysis::MeasuredCosts> costs;  ///< null without --costs
  analysis::ComputeCostOptions compute;  ///< the kernel model (defaults, or --calibration)
  std::string source;                    ///< the model path, for messages
  /// Train mode: passes per optimizer step, and the batch of one (the graph's); 0 when the
  /// model's batch was not set with --batch.
  int micro_batches = 1;
  int64_t micro_batch = 0;
  /// Train mode: pipeline stages, and the schedule of a pipelined plan's passes.
  int pipeline_stages = 1;
  /// Train mode: whether the training graph was built for pipeline stages
  /// (PipelineFlags::pipelined_gradients).
  bool pipelined_gradients = false;
  codegen::Schedule schedule = codegen::Schedule::k1F1B;
  int virtual_stages = 1;  ///< train mode: model chunks per stage (--virtual-stages)
  int zero_stage = 0;      ///< train mode: 0, 2 or 3 (--zero)
  /// Train mode: the plan is this many data-parallel replicas of one block (--replicas, or a
  /// plan file's): compiled steps fetch inside each replica (codegen::PartitionOptions).
  int replicas = 1;
  /// Set on the model of two replicas of a block (cli/replicated_plan.h), by pipeline stage
  /// count: its compiled steps are priced as all the cluster's replicas (codegen::ReplicaSet).
  std::map<int, std::shared_ptr<const codegen::ReplicaSet>> replica_sets;
  /// The graph on the topology with lowering_options(): what every command that prices,
  /// searches or compiles this model shares (set once the topology and costs are known).
  std::unique_ptr<analysis::Lowering> lowering;
  /// Plans already compiled and simulated (cli/plan_model.h, program_metrics): a search, its
  /// device blocks and the data-parallel baselines ask for the same plan more than once. Safe
  /// to use from several threads.
  struct MetricsCache {
    std::mutex mutex;
    std::map<std::string, search::PlanMetrics> metrics;  ///< configs' text -> figures
  };
  std::unique_ptr<MetricsCache> metrics_cache;

  /// The lowering options every command that prices this model uses: measured costs and the
  /// kernels the precision selects.
  analysis::LoweringOptions lowering_options() const;
};

/// The output guard again, once the model is imported: `outputs` must not be any of the files
/// that hold its external data either (they are known only after reading the model).
Expected<void> check_outputs_after_import(const std::vector<OutputPath>& outputs,
                                          std::vector<InputPath> inputs, const ir::Graph& graph,
                                          const std::string& model_path);

/// The `--dump-after strategies` text: one line per operator in topological order, its valid
/// splits (index variables; reductions marked) and the invalid ones with why.
std::string strategies_text(const ir::Graph& graph, const analysis::GraphStrategies& strategies);

/// Runs the front of the pipeline. When --dump-after names a stage it prints that stage and
/// `dumped` is set (the command then stops).
Expected<std::unique_ptr<PreparedModel>> prepare_model(const PipelineFlags& flags, bool& dumped);

}  // namespace planner::cli
