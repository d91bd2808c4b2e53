// The searching half of the pipeline, shared by `plan`, `frontier`, `compare` and `verify`:
// search flags, a prepared model with its lowering and groups, and planning it into a Plan.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/lowering.h"
#include "cli/pipeline.h"
#include "cli/replicated_plan.h"
#include "search/plan.h"
#include "search/search.h"
#include "search/space.h"

namespace planner::cli {

/// Flags of a search: which one, its seed, budget and memory limit.
struct SearchFlags {
  std::string search = "dp";  ///< a name from search::searches()
  uint64_t seed = 0;          ///< random seed
  double budget_s = 60;       ///< --budget: seconds any search may take
  std::string memory_limit;   ///< --memory-limit: bytes per device ("80GiB"); default the device's
  int frontier_points = 10;   ///< --frontier-points
  bool no_progress = false;   ///< --no-progress: never draw the progress line
  int64_t max_proposals = 0;  ///< --max-proposals: mcmc's proposal cap (0: budget alone)
  std::string objective = "time";  ///< --objective time|comm (dp)
  bool all_gpus = false;           ///< --all-gpus: dp and frontier never leave GPUs idle
  bool min_gpus = false;           ///< --min-gpus: frontier on the fewest GPUs that fit
  bool no_fallback =
      false;        ///< --no-fallback: keep the search's plan even if data parallelism is faster
  int threads = 0;  ///< --threads: worker threads (0: one per hardware thread)
  bool sequence_parallel = false;  ///< --sequence-parallel (the megatron searches)
  int tensor_parallel = 0;         ///< --tensor-parallel (megatron, megatron-2d); 0: theirs

  /// Adds the flags (and --search unless `with_search` is false).
  /// `with_seed` false leaves --seed to the command (verify's seeds the search and the data).
  void add_to(CLI::App& app, bool with_search = true, bool with_seed = true);
  /// The search options for `topology`; a malformed --memory-limit is an error.
  Expected<search::SearchOptions> options(const importers::Topology& topology) const;
};

/// A prepared model ready to search: the pipeline's front, its lowering and its groups.
struct SearchSession {
  std::unique_ptr<PreparedModel> model;
  const analysis::Lowering* lowering = nullptr;  ///< the model's (PreparedModel::lowering)
  std::unique_ptr<search::GroupSpace> space;
  /// --replicas above 1: the searches plan one block (its model and groups, `space` unset).
  std::unique_ptr<ReplicaModels> replicas;

  /// What the searches plan: the model, or one replica's block.
  search::SearchContext context() const;
};

/// Runs the pipeline's front and prepares the search. `dumped` as prepare_model.
Expected<SearchSession> open_session(const PipelineFlags& flags, bool& dumped);

/// A planned model: the plan and what its summary says beside it.
struct PlanOutcome {
  search::Plan plan;
  std::vector<std::string> notes;  ///< e.g. "kept data parallelism: …"
  double search_seconds = 0;       ///< wall clock of the search (never written to the plan)
  int64_t memory_limit = 0;        ///< bytes per device the plan had to fit
  bool fits = true;                ///< the largest device's peak is within the limit
  /// A pipelined plan asked to run 1F1B that compiles to GPipe (1F1B cannot order its messages).
  bool gpipe_fallback = false;
  bool complete = true;  ///< false: stopped early (plan_model's stop_if_unfit), no plan built
  /// Stopped early on a bound: `plan.predicted.peak_memory_bytes` is at most the plan's peak.
  bool peak_at_least = false;
  std::vector<analysis::OpConfig> configs;  ///< the plan's configs, one per op
  /// With replicas: two replicas' configs (on the model of two, ReplicaModels::two), whose
  /// compiled step the plan's figures come from; empty otherwise.
  std::vector<analysis::OpConfig> pair_configs;
  /// The frontier the search chose from, as SearchResult has it (the frontier search only).
  std::vector<search::PlanMetrics> frontier;
  int frontier_gpus = 0;
  int frontier_chosen = -1;
};

/// Searches `session` with `search_flags` and builds the plan, scored by the simulator beside
/// data parallelism. A search's plan slower than data parallelism (which fits) gives way to
/// data parallelism, with a note. Errors: unknown search, bad flags, a search failing.
/// `stop_if_unfit`: when the search's plan does not fit and data parallelism cannot either (its
/// every GPU would hold all the parameters and optimizer state, or with --zero 2 all the
/// parameters), return at once with the search's peak memory alone (`complete` false;
/// exceeds_memory): the caller plans another step variant.
Expected<PlanOutcome> plan_model(const SearchSession& session, const PipelineFlags& pipeline,
                                 const SearchFlags& search_flags, bool stop_if_unfit = false);

/// The bytes of every parameter and optimizer state of `graph` (`parameters_only`: of every
/// parameter): what data parallelism keeps on every GPU (with --zero 2).
int64_t replicated_state_bytes(const ir::Graph& graph, bool parameters_only = false);

/// A progress line on stderr when it is a terminal (and not disabled), cleared when done.
std::function<void(double, std::string_view)> terminal_progress(bool disabled);

}  // namespace planner::cli
