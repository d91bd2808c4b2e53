// The search table, and the baselines that need no search.
#include "search/search.h"

#include <algorithm>
#include <limits>

#include "support/text.h"

namespace planner::search {

const std::vector<SearchInfo>& searches() {
  static const std::vector<SearchInfo> table = {
      {"dp", "recursive dynamic programming over k-cuts (Tofu, SoyBean)", &run_dp},
      {"frontier", "memory/time frontier tracking, fastest plan that fits (TensorOpt)",
       &run_frontier},
      {"mcmc", "Markov chain Monte Carlo over devices and cuts per group (FlexFlow)", &run_mcmc},
      {"data-parallel", "baseline: every operator split along the batch", &run_data_parallel},
      {"model-parallel", "baseline: operators with parameters split along their output features",
       &run_model_parallel},
      {"one-weird-trick",
       "baseline: convolutions data-parallel, fully connected layers model-parallel (Krizhevsky)",
       &run_one_weird_trick},
      {"megatron",
       "baseline: tensor parallelism inside nodes, data parallelism across them (Megatron-LM)",
       &run_megatron},
      {"megatron-2d",
       "baseline: Megatron-LM's tensor x data parallelism at the fastest tensor-parallel degree "
       "that fits (enumerated)",
       &run_megatron_2d},
      {"megatron-3d",
       "baseline: Megatron-LM's tensor x pipeline x data parallelism, degrees enumerated "
       "(1F1B or GPipe stages, --micro-batches as given)",
       &run_megatron_3d},
      {"fsdp",
       "baseline: data parallelism with parameters, gradients and optimizer state sharded "
       "(ZeRO stage 2, FSDP SHARD_GRAD_OP)",
       &run_fsdp},
  };
  return table;
}

Expected<const SearchInfo*> find_search(std::string_view name) {
  std::vector<std::string> names;
  for (const SearchInfo& s : searches()) {
    if (s.name == name) return &s;
    names.emplace_back(s.name);
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  std::string close = closest_match(name, names, 3);
  if (!close.empty())
    return make_error("unknown search '{}'; did you mean '{}'? (searches: {})", name, close, list);
  return make_error("unknown search '{}' (searches: {})", name, list);
}

std::vector<int> all_devices(int n) {
  std::vector<int> d(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) d[static_cast<size_t>(i)] = i;
  return d;
}

int64_t default_memory_limit(const importers::Topology& topology) {
  int64_t m = std::numeric_limits<int64_t>::max();
  for (int d = 0; d < topology.num_devices(); ++d)
    m = std::min(m, static_cast<int64_t>(topology.device_type(d).memory_bytes));
  return m;
}

namespace {

Expected<SearchResult> baseline(const SearchContext& context, analysis::Baseline which) {
  SearchResult r;
  PLANNER_TRY_ASSIGN(r.configs,
                     analysis::baseline_configs(context.lowering, which,
                                                context.lowering.topology().num_devices()));
  r.plans_evaluated = 1;
  return r;
}

}  // namespace

Expected<SearchResult> run_data_parallel(const SearchContext& context, const SearchOptions&) {
  return baseline(context, analysis::Baseline::kDataParallel);
}

Expected<SearchResult> run_model_parallel(const SearchContext& context, const SearchOptions&) {
  return baseline(context, analysis::Baseline::kModelParallel);
}

}  // namespace planner::search
