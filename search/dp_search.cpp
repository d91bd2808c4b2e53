// Recursive dynamic programming over k-cuts (Tofu 5.2, SoyBean Algorithm 1).
#include <algorithm>

#include <fmt/format.h>

#include "search/elimination.h"
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

}  // namespace

Expected<SearchResult> run_dp(const SearchContext& context, const SearchOptions& options) {
  const GroupSpace& space = context.space;
  const int n = context.lowering.topology().num_devices();
  const std::vector<int> devices = all_devices(n);
  const Deadline deadline = Deadline::after(options.budget_s);
  std::vector<CutList> cuts(static_cast<size_t>(space.num_groups()));
  SearchResult result;
  const std::vector<int> factors = factorise(n);
  int done = 1;
  std::string steps;
  for (size_t step = 0; step < factors.size(); ++step) {
    const int k = factors[step];
    done *= k;
    const int rest = n / done;
    if (options.progress) options.progress(static_cast<double>(step) / static_cast<double>(factors.size()),
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
    PLANNER_TRY_ASSIGN(CostTables tables, CostTables::build(space, candidates, devices, deadline, options.objective, options.threads));
    EliminationOptions eo;
    eo.track_memory = false;
    eo.deadline = deadline;
    eo.threads = options.threads;
    PLANNER_TRY_ASSIGN(EliminationResult best, eliminate(tables, eo));
    result.plans_evaluated += static_cast<int64_t>(tables.conversions_priced());
    for (int g = 0; g < space.num_groups(); ++g) {
      const CutList& chosen = candidates[static_cast<size_t>(g)][static_cast<size_t>(best.choices[0][static_cast<size_t>(g)])];
      cuts[static_cast<size_t>(g)].push_back(chosen[cuts[static_cast<size_t>(g)].size()]);
    }
    steps += (steps.empty() ? "" : "x") + std::to_string(k);
  }
  result.configs = space.plan(cuts, devices);
  result.options["cuts"] = steps.empty() ? "1" : steps;
  result.options["objective"] = options.objective == Objective::kCommBytes ? "comm" : "time";
  return result;
}

}  // namespace planner::search
