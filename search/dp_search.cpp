// Recursive dynamic programming over k-cuts (Tofu 5.2, SoyBean Algorithm 1).
#include <algorithm>

#include <fmt/format.h>

#include "search/elimination.h"
#include "search/plan_builder.h"
#include "search/search.h"

namespace planner::search {

namespace {

// k = k1·k2·… with k1 ≥ k2 ≥ …: the prime factors, largest first (2·2·… for powers of two).
std::vector<int> factorise(int k) {
  std::vector<int> f;
  for (int p = 2; p * p <= k; ++p)
    while (k % p == 0) {
      f.push_back(p);
      k /= p;
    }
  if (k > 1) f.push_back(k);
  std::sort(f.rbegin(), f.rend());
  return f;
}

// The recursive DP over the first n devices.
Expected<SearchResult> dp_on(const SearchContext& context, const SearchOptions& options, int n,
                             const Deadline& deadline) {
  const GroupSpace& space = context.space;
  const std::vector<int> devices = all_devices(n);
  std::vector<CutList> cuts(static_cast<size_t>(space.num_groups()));
  SearchResult result;
  const std::vector<int> factors = factorise(n);
  int done = 1;
  std::string steps;
  for (size_t step = 0; step < factors.size(); ++step) {
    const int k = factors[step];
    done *= k;
    const int rest = n / done;
    if (options.progress)
      options.progress(static_cast<double>(step) / static_cast<double>(factors.size()),
                       fmt::format("cut {} of {} ({} ways)", step + 1, factors.size(), k));
    // Candidates of this cut: each variable the group can still split k more ways, or
    // replication; the devices not yet cut replicate the group meanwhile.
    std::vector<std::vector<CutList>> candidates(static_cast<size_t>(space.num_groups()));
    for (int g = 0; g < space.num_groups(); ++g) {
      auto& cands = candidates[static_cast<size_t>(g)];
      const CutList& base = cuts[static_cast<size_t>(g)];
      auto with = [&](Cut c) {
        CutList l = base;
        l.push_back(std::move(c));
        if (rest > 1) l.push_back({"", rest});
        cands.push_back(std::move(l));
      };
      // Minimising bytes, replication would always win (it communicates nothing): like Tofu,
      // that objective replicates only groups that cannot be split.
      const bool replicate = options.objective != Objective::kCommBytes;
      if (replicate) with({"", k});
      for (const auto& [var, extent] : space.vars(g)) {
        int64_t pieces = k;
        for (const Cut& c : base)
          if (c.var == var) pieces *= c.pieces;
        if (pieces <= extent) with({var, k});
      }
      if (cands.empty()) with({"", k});
    }
    PLANNER_TRY_ASSIGN(CostTables tables, CostTables::build(space, candidates, devices, deadline,
                                                            options.objective, options.threads));
    EliminationOptions eo;
    eo.track_memory = false;
    eo.deadline = deadline;
    eo.threads = options.threads;
    PLANNER_TRY_ASSIGN(EliminationResult best, eliminate(tables, eo));
    result.plans_evaluated += static_cast<int64_t>(tables.conversions_priced());
    for (int g = 0; g < space.num_groups(); ++g) {
      const CutList& chosen =
          candidates[static_cast<size_t>(g)]
                    [static_cast<size_t>(best.choices[0][static_cast<size_t>(g)])];
      cuts[static_cast<size_t>(g)].push_back(chosen[cuts[static_cast<size_t>(g)].size()]);
    }
    steps += (steps.empty() ? "" : "x") + std::to_string(k);
  }
  result.configs = space.plan(cuts, devices);
  result.options["cuts"] = steps.empty() ? "1" : steps;
  result.options["objective"] = options.objective == Objective::kCommBytes ? "comm" : "time";
  return result;
}

}  // namespace

std::vector<int> device_blocks(int n) {
  std::vector<int> out = {n};
  for (int f : factorise(n)) out.push_back(out.back() / f);
  return out;
}

// The DP over all n devices, and over the first n / k1, n / (k1·k2), … (the blocks its first
// cuts make: a node, half a node, …), the fastest plan that fits by the simulator kept. A plan
// on fewer devices is a plan on all of them with the rest idle, so more GPUs are never
// predicted slower than the best plan this search finds on fewer (a batch too small to spread
// over the whole machine stays on a part of it, and the note says so).
Expected<SearchResult> run_dp(const SearchContext& context, const SearchOptions& options) {
  const int n = context.lowering.topology().num_devices();
  const Deadline deadline = Deadline::after(options.budget_s);
  const int64_t limit = options.memory_limit > 0
                            ? options.memory_limit
                            : default_memory_limit(context.lowering.topology());
  PLANNER_TRY_ASSIGN(SearchResult full, dp_on(context, options, n, deadline));
  if (options.objective == Objective::kCommBytes || !options.fewer_devices || n == 1) return full;
  std::vector<SearchResult> results;
  std::vector<int> blocks;
  int64_t evaluated = full.plans_evaluated;
  results.push_back(std::move(full));
  blocks.push_back(n);
  for (int m : device_blocks(n)) {
    if (m == n) continue;
    PLANNER_TRY_ASSIGN(SearchResult r, dp_on(context, options, m, deadline));
    evaluated += r.plans_evaluated;
    results.push_back(std::move(r));
    blocks.push_back(m);
  }
  std::vector<const std::vector<analysis::OpConfig>*> candidates;
  for (const SearchResult& r : results) candidates.push_back(&r.configs);
  PLANNER_TRY_ASSIGN(Pick pick, pick_fastest(context.lowering, options, limit, candidates));
  SearchResult best = std::move(results[pick.index]);
  const int used = blocks[pick.index];
  best.plans_evaluated = evaluated;
  if (used < n) {
    best.options["gpus_used"] = used;
    best.notes.push_back(fmt::format(
        "uses {} of the {} GPUs: this search's plans over more of them are predicted slower", used,
        n));
  }
  return best;
}

}  // namespace planner::search
