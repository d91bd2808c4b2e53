// Tests for search/mcmc.cpp: reproducible from the seed and the proposal cap, and on small
// graphs as good as the exhaustive optimum of the simulated step time over the same space.
#include <chrono>
#include <functional>
#include <string_view>
#include <thread>

#include "search/plan_builder.h"
#include "search/search.h"
#include "tests/search/search_fixture.h"

namespace planner::search {
namespace {

using testing::import_text;
using testing::prepare;

// Five operators: Gemm -> Relu -> Gemm -> Relu -> Gemm, batch 64.
const char* kMlp = R"(<ir_version: 8, opset_import: ["" : 17]>
mlp (float[64,512] x) => (float[64,16] y)
<float[512,512] w1 = {}, float[512,256] w2 = {}, float[256,16] w3 = {}>
{
  h1 = MatMul(x, w1)
  a1 = Relu(h1)
  h2 = MatMul(a1, w2)
  a2 = Relu(h2)
  y = MatMul(a2, w3)
}
)";

// Five operators: Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm, batch 8.
const char* kCnn = R"(<ir_version: 8, opset_import: ["" : 17]>
cnn (float[8,4,16,16] image) => (float[8,16] logits)
<float[32,4,3,3] conv_w = {}, float[16,32] fc_w = {}>
{
  c = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(image, conv_w)
  r = Relu(c)
  g = GlobalAveragePool(r)
  f = Flatten<axis = 1>(g)
  logits = Gemm<transB = 1>(f, fc_w)
}
)";

// The fastest simulated step over every combination of one-cut candidates per group on all
// devices, and how many combinations there were.
std::pair<double, int64_t> exhaustive_optimum(const testing::Prepared& p, int n) {
  const GroupSpace& space = *p.space;
  CandidateOptions co;
  co.max_cuts = 1;
  std::vector<std::vector<CutList>> cands;
  for (int g = 0; g < space.num_groups(); ++g) cands.push_back(space.candidates(g, n, co));
  std::vector<CutList> choice(cands.size());
  double best = 1e300;
  int64_t count = 0;
  const std::vector<int> devices = all_devices(n);
  std::function<void(size_t)> rec = [&](size_t g) {
    if (g == cands.size()) {
      ++count;
      auto m = evaluate_configs(*p.lowering, space.plan(choice, devices));
      REQUIRE_MESSAGE(m.has_value(), (m ? "" : m.error().message()));
      best = std::min(best, m->step_time_s);
      return;
    }
    for (const CutList& c : cands[g]) {
      choice[g] = c;
      rec(g + 1);
    }
  };
  rec(0);
  return {best, count};
}

SearchResult run(const testing::Prepared& p, SearchOptions o) {
  auto r = run_mcmc(p.context(), o);
  REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message()));
  return std::move(*r);
}

double step_time(const testing::Prepared& p, const std::vector<analysis::OpConfig>& configs) {
  auto m = evaluate_configs(*p.lowering, configs);
  REQUIRE_MESSAGE(m.has_value(), (m ? "" : m.error().message()));
  return m->step_time_s;
}

SearchOptions capped(uint64_t seed, int64_t proposals) {
  SearchOptions o;
  o.seed = seed;
  o.budget_s = 0;  // the cap alone: independent of the machine's speed
  o.max_proposals = proposals;
  return o;
}

TEST_CASE("mcmc: the same seed and cap give the same plan, and the options record them") {
  auto p = prepare(import_text(kMlp), importers::h100_cluster(8));
  SearchResult a = run(*p, capped(7, 300));
  SearchResult b = run(*p, capped(7, 300));
  REQUIRE(a.configs.size() == b.configs.size());
  for (size_t i = 0; i < a.configs.size(); ++i)
    CHECK_MESSAGE(a.configs[i] == b.configs[i], p->graph().op(static_cast<ir::OpId>(i)).name);
  CHECK(a.options["seed"] == 7);
  CHECK(a.options["proposals"] == 300);
  CHECK(a.options["beta"].is_number());
  CHECK(a.options.contains("budget_s"));
  CHECK(a.notes.empty());
}

TEST_CASE("mcmc: never worse than data parallelism, its starting point") {
  auto p = prepare(import_text(kMlp), importers::h100_cluster(8));
  auto dp = analysis::baseline_configs(*p->lowering, analysis::Baseline::kDataParallel, 8);
  REQUIRE(dp.has_value());
  SearchResult r = run(*p, capped(1, 200));
  CHECK(step_time(*p, r.configs) <= step_time(*p, *dp) * (1 + 1e-12));
}

TEST_CASE("mcmc: a cap of zero proposals with no budget still stops (default cap)") {
  auto p = prepare(import_text(kMlp), importers::h100_cluster(4), /*train=*/false);
  SearchOptions o;
  o.budget_s = 0;
  SearchResult r = run(*p, o);
  CHECK(r.options["proposals"].get<int64_t>() > 0);
}

TEST_CASE("mcmc: with a cap, a slow machine still reaches it and gets the seed's plan") {
  auto p = prepare(import_text(kMlp), importers::h100_cluster(8));
  SearchResult fast = run(*p, capped(5, 320));
  // A machine that stalls: after the first 64 proposals it pauses for 55% of the budget, longer
  // than the stall rule's window (half the budget without a better plan) but well within the
  // budget. The stall rule used to end the run right there; with a cap it must not.
  SearchOptions slow_options = capped(5, 320);
  slow_options.budget_s = 8;
  bool paused = false;
  slow_options.progress = [&paused](double, std::string_view) {
    if (paused) return;
    paused = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(4400));
  };
  SearchResult slow = run(*p, slow_options);
  CHECK(paused);
  CHECK(slow.options["proposals"] == 320);
  CHECK(slow.notes.empty());
  REQUIRE(slow.configs.size() == fast.configs.size());
  for (size_t i = 0; i < fast.configs.size(); ++i)
    CHECK_MESSAGE(slow.configs[i] == fast.configs[i], p->graph().op(static_cast<ir::OpId>(i)).name);
}

TEST_CASE("mcmc: the notes say whether the budget or a stall ended the run") {
  auto p = prepare(import_text(kMlp), importers::h100_cluster(8));
  SearchOptions o;
  o.seed = 2;
  o.budget_s = 0.4;
  o.progress = [](double, std::string_view) {  // slow enough that 0.4 s pass in any case
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  const auto started = std::chrono::steady_clock::now();
  SearchResult r = run(*p, o);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(r.notes.size() == 1);
  const bool budget = r.notes[0].find("stopped by the time budget") == 0;
  const bool stalled =
      r.notes[0].find("no better plan for half the time budget") != std::string::npos;
  CHECK(budget != stalled);
  if (budget) CHECK(took >= 0.4);
  // A cap the budget cuts short is the budget's doing, never a stall.
  o.max_proposals = 1000000;
  r = run(*p, o);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("stopped by the time budget after") == 0);
  CHECK(r.options["proposals"].get<int64_t>() < 1000000);
}

void check_reaches_optimum(const char* model, int64_t cap) {
  const int n = 4;
  auto p = prepare(import_text(model), importers::h100_cluster(n));
  auto [optimum, combinations] = exhaustive_optimum(*p, n);
  MESSAGE(combinations << " combinations, optimum " << optimum * 1e3 << " ms");
  // The same space: one cut per group, on all four devices.
  SearchOptions o = capped(3, cap);
  o.max_cuts = 1;
  o.device_subsets = false;
  SearchResult r = run(*p, o);
  const double found = step_time(*p, r.configs);
  MESSAGE("mcmc after " << cap << " proposals: " << found * 1e3 << " ms");
  CHECK(found <= optimum * (1 + 1e-9));
}

TEST_CASE("mcmc reaches the exhaustive optimum of a five-operator MLP on 4 GPUs") {
  check_reaches_optimum(kMlp, 1500);
}

TEST_CASE("mcmc reaches the exhaustive optimum of a small CNN on 4 GPUs") {
  check_reaches_optimum(kCnn, 1500);
}

}  // namespace
}  // namespace planner::search
