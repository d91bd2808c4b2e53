// What `planner compile` and `planner verify` share: the model a plan was made for, prepared
// by the same pipeline as plan/simulate and checked against the plan, and the configs of a
// named search.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/op_config.h"
#include "cli/options.h"
#include "cli/pipeline.h"
#include "cli/plan_lookup.h"
#include "codegen/program.h"
#include "codegen/program_simulation.h"
#include "search/plan.h"

namespace planner::cli {

/// Prepares `model_path` as `plan` (read from `plan_path`) was made: its mode, its topology's
/// device count, and the options recorded in plan.search.options, checked and applied by
/// apply_plan_options (cli/plan_options.h). Then checks that the plan is for this model:
/// the file's SHA-256, the operators (count, names, types) and the tensors' shapes.
/// `costs` and `calibration` (paths, "" for none) price the model as `plan --costs FILE`
/// and `--calibration FILE` do. The topology is the one the plan names: `topology` (a preset or
/// a topology file, --topology) when given, else the built-in preset or default H100 cluster of
/// that name; its name must be the plan's.
Expected<std::unique_ptr<PreparedModel>> prepare_for_plan(
    const search::Plan& plan, const std::string& plan_path, const ModelFlags& model,
    const std::string& optimizer, const std::string& costs = "",
    const std::string& calibration = "", const std::string& topology = "");

/// The precision recorded in `plan` (search.options.precision; absent means fp32).
std::string plan_precision(const search::Plan& plan);

/// Checks that a --precision given on the command line (`requested`, empty when not given)
/// agrees with the plan's: one error naming the plan file and both precisions otherwise.
Expected<void> check_plan_precision(const search::Plan& plan, const std::string& plan_path,
                                    const std::string& requested);

/// The plan's configs, in graph order.
std::vector<analysis::OpConfig> plan_configs(const search::Plan& plan);

/// Partitions `configs` over `num_ranks` ranks, errors prefixed with the model file. In train
/// mode with micro-batches the step runs `micro_batches` passes (0: the model's
/// --micro-batches), gradients accumulated between them (codegen/micro_batch.h).
/// A plan on `stages` pipeline stages (0: the model's --pipeline-stages) runs its passes in the
/// model's schedule. `priced_only`: the programs are for pricing or for their schedule alone
/// (alike ranks keep one representative's steps, constants no bytes: codegen/rank_classes.h).
Expected<codegen::Programs> compile_programs(const PreparedModel& model,
                                             const std::vector<analysis::OpConfig>& configs,
                                             int num_ranks, int micro_batches = 0, int stages = 0,
                                             bool priced_only = false);

/// Above this many micro-batches, program_metrics simulates the step of this many passes and
/// of one fewer, and extends the difference to the rest.
inline constexpr int kSimulatedPasses = 3;

/// The compiled step `programs` of `model` simulated on its topology with its cost model
/// (codegen::simulate_programs): the figures plan, simulate and compile report. `tasks` and
/// `timeline`, when given, receive the task graph and its schedule.
Expected<codegen::ProgramCost> price_programs(const PreparedModel& model,
                                              const codegen::Programs& programs,
                                              codegen::ProgramTasks* tasks = nullptr,
                                              analysis::Timeline* timeline = nullptr);

/// A plan compiled and its compiled step simulated.
struct SimulatedProgram {
  codegen::Programs programs;
  codegen::ProgramTasks tasks;
  analysis::Timeline timeline;
  codegen::ProgramCost cost;
};

/// `configs` partitioned over every device of the model's topology (compile_programs) and
/// simulated (price_programs).
Expected<SimulatedProgram> simulate_plan(const PreparedModel& model,
                                         const std::vector<analysis::OpConfig>& configs,
                                         int stages = 0);

/// simulate_plan's figures: a plan's predicted step time, peak memory and bytes sent.
Expected<search::PlanMetrics> program_metrics(const PreparedModel& model,
                                              const std::vector<analysis::OpConfig>& configs,
                                              int stages = 0);

/// program_metrics' peak memory of the plan where it is within `limit`; above it, that peak
/// or, found more cheaply, a lower bound of it that already exceeds `limit` (`at_least`): a
/// pipelined step of M > K + 2 micro-batches on K stages is first simulated with (K + 1) / 2
/// passes, then K + 1 (program_metrics simulates K + 1 and K + 2 and extends them), whose
/// peaks are at most the whole step's (a step of fewer passes holds fewer in flight; once
/// every stage holds its most, more passes repeat the steady state). For the step variants,
/// which skip a plan that cannot fit.
struct PeakMemory {
  int64_t bytes = 0;
  bool at_least = false;
};
Expected<PeakMemory> peak_memory(const PreparedModel& model,
                                 const std::vector<analysis::OpConfig>& configs, int stages,
                                 int64_t limit);

/// Every operator on rank 0, whole: the unpartitioned reference step.
std::vector<analysis::OpConfig> single_device_configs(const PreparedModel& model);

}  // namespace planner::cli
