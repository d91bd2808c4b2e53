// The searches behind `planner plan --search …`, selectable by name from one table, all
// scored by the same cost model and simulator, and the baselines they are compared with.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/lowering.h"
#include "analysis/training_graph.h"
#include "search/cost_tables.h"
#include "search/plan.h"
#include "search/space.h"
#include "support/expected.h"

namespace planner::search {

/// What every search reads: the graph's lowering (graph, strategies, topology, cost model) and
/// its groups.
struct SearchContext {
  const analysis::Lowering& lowering;
  const GroupSpace& space;
  const analysis::TrainingGraph* training = nullptr;  ///< null in inference mode
};

/// Options common to every search; each search reads the ones it needs.
struct SearchOptions {
  uint64_t seed = 0;         ///< random seed (mcmc); recorded in the plan for all
  double budget_s = 60;      ///< wall-clock bound on the search, seconds (0: none)
  int64_t memory_limit = 0;  ///< bytes per device a plan may use; 0: the smallest device's memory
  int threads = 1;           ///< worker threads where a search parallelises
  int frontier_points = 10;  ///< most points a frontier keeps (frontier)
  bool min_gpus = false;
  /// dp and frontier: also search the first blocks of fewer devices (device_blocks) and keep
  /// the fastest plan, leaving the other devices idle (--all-gpus turns it off).
  bool fewer_devices = true;
  /// dp: minimise the tables' time (default) or the bytes communicated (Tofu, SoyBean).
  Objective objective =
      Objective::kTime;  ///< frontier: use the fewest GPUs (first of 1, 2, 4, …) that fit
  /// Most proposals a search makes (mcmc); 0: no cap (with budget_s also 0, a default cap).
  /// A cap reached before the budget makes the result independent of the machine's speed.
  int64_t max_proposals = 0;
  int max_cuts = 2;            ///< most cuts in a group's cut list (mcmc)
  bool device_subsets = true;  ///< also place groups on aligned blocks of fewer devices (mcmc)
  /// megatron, megatron-2d, megatron-3d: Megatron-LM's sequence parallelism (Korthikanti et al.
  /// 2022): the operators tensor parallelism leaves whole (norms, dropout, residual adds,
  /// embeddings) split along the sequence instead.
  bool sequence_parallel = false;
  /// megatron, megatron-2d, megatron-3d: the tensor-parallel degree (0: megatron takes a
  /// node's GPUs, megatron-2d each degree that divides a node); more than a node's GPUs runs
  /// tensor parallelism across nodes.
  int tensor_parallel = 0;
  /// Pipelined plans (search/pipeline.h): model chunks per stage (Megatron-LM's virtual
  /// pipeline stages): the forward operators are cut into stages x virtual_stages runs, run j
  /// on stage j % stages.
  int virtual_stages = 1;
  /// Called now and then with the fraction done and a few words (for a progress line).
  std::function<void(double, std::string_view)> progress;
  /// The last word on whole plans where a search chooses among a few (dp's and frontier's
  /// device blocks, the frontier's points): the driver gives the compiled step simulated
  /// (docs/codegen.md), so the choice is made on the figures the plan will report. Must be
  /// safe to call from several threads. Unset: the lowering simulated (evaluate_configs).
  std::function<Expected<PlanMetrics>(const std::vector<analysis::OpConfig>&)> judge;
  /// The judge of a plan placed on `stages` pipeline stages (search/pipeline.h), where a search
  /// tries stage counts of its own (megatron-3d). Unset: `judge`.
  std::function<Expected<PlanMetrics>(const std::vector<analysis::OpConfig>&, int stages)>
      judge_stages;
};

/// A search's answer.
struct SearchResult {
  std::vector<analysis::OpConfig> configs;  ///< one per op of the graph
  /// The options that reproduce it, in the order the plan file lists them.
  nlohmann::ordered_json options = nlohmann::ordered_json::object();
  std::vector<std::string> notes;  ///< what a person should know ("kept data parallelism: …")
  int64_t plans_evaluated = 0;     ///< simulations or table evaluations, for reports
  /// The frontier the plan was chosen from (the frontier search), simulated, so that a report
  /// draws it without pricing it again; empty for the other searches.
  std::vector<PlanMetrics> frontier;
  int frontier_gpus = 0;     ///< the GPU count the frontier is for
  int frontier_chosen = -1;  ///< index of the plan's point in `frontier`
};

/// One entry of the search table.
struct SearchInfo {
  std::string_view name;     ///< --search value
  std::string_view summary;  ///< one line for --help and errors
  Expected<SearchResult> (*run)(const SearchContext&, const SearchOptions&);
};

/// The searches and baselines, in the order `planner compare` lists them.
const std::vector<SearchInfo>& searches();
/// The entry called `name`; the error lists the names and suggests the closest.
Expected<const SearchInfo*> find_search(std::string_view name);

/// The device list 0..n-1.
std::vector<int> all_devices(int n);

/// n, then the blocks the recursive DP's cuts make of it: n / k1, n / (k1·k2), …, 1 for the
/// prime factors k1 ≥ k2 ≥ … of n. dp and frontier also search the first such block of devices
/// and keep the fastest plan, so more GPUs are never predicted slower than fewer.
std::vector<int> device_blocks(int n);

/// The device memory a plan may use by default: the smallest device's.
int64_t default_memory_limit(const importers::Topology& topology);

// ---- the searches (one file each) ----

/// Recursive dynamic programming (Tofu 5.2, SoyBean Algorithm 1): the device count factorised
/// k = k1·k2·… (k1 ≥ k2 ≥ …; 2·2·… for powers of two), one cut per factor, each chosen for
/// every group at once by the exact DP over the group graph given the earlier cuts; the first
/// cut falls on the slowest links.
Expected<SearchResult> run_dp(const SearchContext& context, const SearchOptions& options);
/// Data parallelism with every update sharded over the replicas (ZeRO stage 2).
Expected<SearchResult> run_fsdp(const SearchContext& context, const SearchOptions& options);
/// Data parallelism, with `note` in the result (what a baseline keeps where it does not apply).
Expected<SearchResult> data_parallel_fallback(const SearchContext& context, std::string note);

/// Frontier tracking (TensorOpt 3.2): the (memory, time) frontier over every cut list of at
/// most two cuts, then the fastest frontier plan that fits the memory limit by the simulator.
Expected<SearchResult> run_frontier(const SearchContext& context, const SearchOptions& options);

/// Markov chain Monte Carlo over the SOAP space (FlexFlow, section 6): per group a device set
/// (all devices, or aligned blocks of k devices, k dividing the count) and a cut list on it;
/// each proposal changes one group, scored by delta simulation; Metropolis-Hastings acceptance;
/// restarts from data parallelism, random strategies and the best plan seen. Reproducible from
/// the seed and the number of proposals made (docs/search.md).
Expected<SearchResult> run_mcmc(const SearchContext& context, const SearchOptions& options);

}  // namespace planner::search

namespace planner::search {

/// Data parallelism: every operator split along the batch over all devices.
Expected<SearchResult> run_data_parallel(const SearchContext& context,
                                         const SearchOptions& options);
/// Model parallelism: operators with parameters split along their output features.
Expected<SearchResult> run_model_parallel(const SearchContext& context,
                                          const SearchOptions& options);
/// Krizhevsky's "one weird trick" for CNNs: convolutions and everything before the first fully
/// connected layer data-parallel, fully connected layers (and what follows them) split along
/// their output features. Models without convolutions fall back to data parallelism (noted).
Expected<SearchResult> run_one_weird_trick(const SearchContext& context,
                                           const SearchOptions& options);
/// Megatron-LM for transformers: tensor parallelism inside a node (column-parallel then
/// row-parallel linear layers, attention heads split alike, the rest replicated) and data
/// parallelism across nodes. Models without attention fall back to data parallelism (noted).
Expected<SearchResult> run_megatron(const SearchContext& context, const SearchOptions& options);
/// Megatron-LM's layout at every tensor-parallel degree dividing a node, data parallelism over
/// the rest: the fastest that fits (as practitioners tune the degrees; no pipeline stages).
Expected<SearchResult> run_megatron_2d(const SearchContext& context, const SearchOptions& options);
/// Megatron-LM's 3-D layout: megatron-2d inside each of K pipeline stages, for every stage
/// count K (1, 2, 4, ... up to 16, dividing the GPUs) — tensor x pipeline x data degrees
/// enumerated as practitioners tune them, the micro-batches as given; the fastest that fits.
/// The result records its stage count (options "pipeline_stages").
Expected<SearchResult> run_megatron_3d(const SearchContext& context, const SearchOptions& options);

}  // namespace planner::search
