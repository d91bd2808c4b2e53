// Markov chain Monte Carlo over the SOAP space (FlexFlow, section 6), one group per proposal.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "analysis/plan_simulation.h"
#include "search/search.h"
#include "support/units.h"

namespace planner::search {

namespace {

// Metropolis-Hastings: a proposal worse by a fraction f of the current cost is accepted with
// probability exp(-kBeta * f): 0.5% worse 37%, 2% worse 2%, 5% worse 0.005%.
constexpr double kBeta = 200;
// A plan over the memory limit costs its step time times 1 + kMemoryPenalty * (peak / limit -
// 1): 10% over the limit doubles it, so chains leave plans that do not fit.
constexpr double kMemoryPenalty = 10;
// With neither a budget nor a cap, the search stops after this many proposals.
constexpr int64_t kDefaultMaxProposals = 10000;
// A chain restarts after this many proposals without improving on its own best (at least).
constexpr int64_t kMinChainPatience = 200;

// Uniform draws from mt19937_64's raw output, whose sequence the standard fixes; the standard
// distributions are not used because their output differs between standard libraries.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, n), n > 0: rejection of the incomplete last block of 2^64 values.
  uint64_t below(uint64_t n) {
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    const uint64_t limit = max - max % n;
    uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return x % n;
  }
  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

// The device sets a group may run on: all devices first, then (with subsets) for each proper
// divisor k of n, largest first, the aligned blocks {i·k, …, i·k+k-1}. A block keeps the
// devices of one node together on a topology numbered node by node.
std::vector<std::vector<int>> device_sets(int n, bool subsets) {
  std::vector<std::vector<int>> sets = {all_devices(n)};
  if (!subsets) return sets;
  for (int k = n - 1; k >= 1; --k) {
    if (n % k != 0) continue;
    for (int start = 0; start < n; start += k) {
      std::vector<int> block(static_cast<size_t>(k));
      for (int i = 0; i < k; ++i) block[static_cast<size_t>(i)] = start + i;
      sets.push_back(std::move(block));
    }
  }
  return sets;
}

// One group's choices: per device set, the candidate cut lists of its size (shared between
// sets of one size), and the prefix sums that number (set, cut list) pairs 0..total-1.
struct GroupOptions {
  std::vector<const std::vector<CutList>*> per_set;
  std::vector<int64_t> prefix;  // prefix[s]: options before set s; back(): the total
  int64_t total() const { return prefix.back(); }
};

class Space {
 public:
  Space(const GroupSpace& space, int n, const SearchOptions& options)
      : space_(space), sets_(device_sets(n, options.device_subsets)) {
    CandidateOptions co;
    co.max_cuts = std::max(1, options.max_cuts);
    std::vector<int> sizes;
    for (const auto& s : sets_) sizes.push_back(static_cast<int>(s.size()));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    cands_.resize(static_cast<size_t>(space.num_groups()));
    groups_.resize(static_cast<size_t>(space.num_groups()));
    for (int g = 0; g < space.num_groups(); ++g) {
      auto& by_size = cands_[static_cast<size_t>(g)];
      for (int k : sizes) by_size.push_back(space.candidates(g, k, co));
      GroupOptions& o = groups_[static_cast<size_t>(g)];
      o.prefix.push_back(0);
      for (const auto& set : sets_) {
        size_t si = static_cast<size_t>(
            std::lower_bound(sizes.begin(), sizes.end(), static_cast<int>(set.size())) -
            sizes.begin());
        o.per_set.push_back(&by_size[si]);
        o.prefix.push_back(o.prefix.back() + static_cast<int64_t>(by_size[si].size()));
      }
      if (o.total() > 1) mutable_.push_back(g);
    }
  }

  // Groups with more than one option, the ones a proposal may change.
  const std::vector<int>& mutable_groups() const { return mutable_; }
  int64_t num_options(int g) const { return groups_[static_cast<size_t>(g)].total(); }

  // The members' configs of option `i` of group `g`.
  std::vector<std::pair<ir::OpId, analysis::OpConfig>> configs(int g, int64_t i) const {
    const GroupOptions& o = groups_[static_cast<size_t>(g)];
    size_t s = static_cast<size_t>(std::upper_bound(o.prefix.begin(), o.prefix.end(), i) -
                                   o.prefix.begin() - 1);
    const CutList& cuts = (*o.per_set[s])[static_cast<size_t>(i - o.prefix[s])];
    return space_.configs(g, cuts, sets_[s]);
  }

 private:
  const GroupSpace& space_;
  std::vector<std::vector<int>> sets_;
  std::vector<std::vector<std::vector<CutList>>> cands_;  // per group, per distinct set size
  std::vector<GroupOptions> groups_;
  std::vector<int> mutable_;
};

// What the search minimises: the step time, penalised when the plan does not fit.
double cost_of(const analysis::PlanCost& c, int64_t limit) {
  double over = static_cast<double>(c.peak_memory) / static_cast<double>(limit) - 1;
  return c.step_time * (1 + kMemoryPenalty * std::max(0.0, over));
}

// Better plans: fitting before not fitting, then lower cost.
bool better(bool fits_a, double cost_a, bool fits_b, double cost_b) {
  if (fits_a != fits_b) return fits_a;
  return cost_a < cost_b;
}

}  // namespace

Expected<SearchResult> run_mcmc(const SearchContext& context, const SearchOptions& options) {
  using Clock = std::chrono::steady_clock;
  const analysis::Lowering& lowering = context.lowering;
  const int n = lowering.topology().num_devices();
  const int64_t limit =
      options.memory_limit > 0 ? options.memory_limit : default_memory_limit(lowering.topology());
  const int64_t cap = options.max_proposals > 0 ? options.max_proposals
                      : options.budget_s > 0    ? std::numeric_limits<int64_t>::max()
                                                : kDefaultMaxProposals;
  const Clock::time_point started = Clock::now();
  const Deadline deadline = Deadline::after(options.budget_s);
  Space space(context.space, n, options);
  const auto& movable = space.mutable_groups();
  const int64_t patience =
      std::max<int64_t>(kMinChainPatience, 10 * static_cast<int64_t>(context.space.num_groups()));
  Rng rng(options.seed);

  PLANNER_TRY_ASSIGN(std::vector<analysis::OpConfig> dp,
                     analysis::baseline_configs(lowering, analysis::Baseline::kDataParallel, n));
  PLANNER_TRY_ASSIGN(analysis::PlanSimulation sim, analysis::PlanSimulation::create(lowering, dp));

  SearchResult result;
  std::vector<analysis::OpConfig> best_configs = sim.configs();
  analysis::PlanCost best_cost = sim.cost();
  bool best_fits = best_cost.peak_memory <= limit;
  double best = cost_of(best_cost, limit);
  Clock::time_point last_improved = started;

  int64_t proposals = 0, restarts = 0;
  // Why the loop ended early, if it did: the budget ran out, or (without a proposal cap) no
  // improvement for half the budget. With a cap the stall rule is off, so that a loaded
  // machine that proposes slowly still reaches the cap and the seed's plan.
  enum class Stop { kNone, kBudget, kStalled } stop = Stop::kNone;
  double current = best;
  double chain_best = current;
  int64_t chain_since = 0;  // proposals since the chain last improved on its own best

  // A fresh chain: alternately a random strategy and the best plan seen. A random strategy
  // the lowering refuses starts from the best instead.
  auto restart = [&]() -> Expected<void> {
    ++restarts;
    std::optional<analysis::PlanSimulation> next;
    if (restarts % 2 == 1) {
      std::vector<analysis::OpConfig> configs = best_configs;
      for (int g = 0; g < context.space.num_groups(); ++g) {
        int64_t i = static_cast<int64_t>(rng.below(static_cast<uint64_t>(space.num_options(g))));
        for (auto& [op, config] : space.configs(g, i))
          configs[static_cast<size_t>(op)] = std::move(config);
      }
      auto s = analysis::PlanSimulation::create(lowering, std::move(configs));
      if (s) next.emplace(std::move(*s));
    }
    if (!next) {
      PLANNER_TRY_ASSIGN(analysis::PlanSimulation s,
                         analysis::PlanSimulation::create(lowering, best_configs));
      next.emplace(std::move(s));
    }
    sim = std::move(*next);
    current = cost_of(sim.cost(), limit);
    chain_best = current;
    chain_since = 0;
    return ok();
  };

  while (proposals < cap && !movable.empty()) {
    if (options.budget_s > 0) {
      if (deadline.passed()) {
        stop = Stop::kBudget;
        break;
      }
      const double since_improved =
          std::chrono::duration<double>(Clock::now() - last_improved).count();
      if (options.max_proposals <= 0 && since_improved > options.budget_s / 2) {
        stop = Stop::kStalled;
        break;
      }
    }
    if (chain_since >= patience) PLANNER_TRY(restart());
    ++proposals;
    ++chain_since;
    const int g = movable[static_cast<size_t>(rng.below(movable.size()))];
    const int64_t choice =
        static_cast<int64_t>(rng.below(static_cast<uint64_t>(space.num_options(g))));
    auto changes = space.configs(g, choice);
    const bool same = std::all_of(changes.begin(), changes.end(), [&](const auto& c) {
      return sim.configs()[static_cast<size_t>(c.first)] == c.second;
    });
    if (same) continue;  // the group's current option: nothing to simulate
    auto proposed = sim.propose(changes);
    if (!proposed) continue;  // a config the lowering refuses: rejected
    const double next = cost_of(*proposed, limit);
    const double u = rng.unit();  // drawn for every scored proposal, so the stream stays aligned
    if (next <= current || u < std::exp(-kBeta * (next - current) / current)) {
      sim.accept();
      current = next;
      if (current < chain_best) {
        chain_best = current;
        chain_since = 0;
      }
      const bool fits = proposed->peak_memory <= limit;
      if (better(fits, current, best_fits, best)) {
        best = current;
        best_fits = fits;
        best_cost = *proposed;
        best_configs = sim.configs();
        last_improved = Clock::now();
      }
    } else {
      sim.revert();
    }
    if (options.progress && proposals % 64 == 0) {
      double done = cap == std::numeric_limits<int64_t>::max()
                        ? 0
                        : static_cast<double>(proposals) / static_cast<double>(cap);
      if (options.budget_s > 0)
        done = std::max(
            done, std::chrono::duration<double>(Clock::now() - started).count() / options.budget_s);
      options.progress(std::min(1.0, done), fmt::format("{} proposals, best step {}", proposals,
                                                        format_seconds(best_cost.step_time)));
    }
  }

  result.configs = std::move(best_configs);
  result.plans_evaluated = proposals + restarts + 1;
  result.options["seed"] = options.seed;
  result.options["budget_s"] = options.budget_s;
  result.options["proposals"] = proposals;
  result.options["beta"] = kBeta;
  result.options["max_cuts"] = std::max(1, options.max_cuts);
  result.options["device_subsets"] = options.device_subsets;
  result.options["memory_limit_bytes"] = limit;
  if (stop == Stop::kBudget)
    result.notes.push_back(
        fmt::format("stopped by the time budget after {} proposals; max_proposals {} with the "
                    "same seed reproduces this plan",
                    proposals, proposals));
  if (stop == Stop::kStalled)
    result.notes.push_back(
        fmt::format("stopped after {} proposals: no better plan for half the time budget; "
                    "max_proposals {} with the same seed reproduces this plan",
                    proposals, proposals));
  if (!best_fits) result.notes.push_back("no plan seen fits the memory limit");
  return result;
}

}  // namespace planner::search
