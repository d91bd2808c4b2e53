// Tests for analysis/plan_delta.cpp: delta simulation of one operator's new configuration
// equals full simulation, on the shared models' training steps.
#include "analysis/plan_delta.h"

#include <random>

#include "analysis/lowering.h"
#include "analysis/simulator.h"
#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "tdl/library.h"
#include "tests/test_util.h"

namespace planner::analysis {
namespace {

// A random configuration of `op` over `devices` GPUs: replicated or one or two variables split.
OpConfig random_config(const Lowering& lowering, ir::OpId op, int devices, std::mt19937& rng) {
  const auto& vars = lowering.splittable(op);
  std::vector<int> perm(static_cast<size_t>(devices));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  OpConfig c;
  if (vars.empty() || rng() % 4 == 0) {
    int n = 1 << (rng() % 4);  // 1, 2, 4 or 8 copies
    n = std::min(n, devices);
    c.replicas = n;
    c.devices.assign(perm.begin(), perm.begin() + n);
    return c;
  }
  std::vector<std::pair<std::string, int64_t>> list(vars.begin(), vars.end());
  int budget = devices;
  int splits = 1 + static_cast<int>(rng() % 2);
  for (int i = 0; i < splits && budget > 1; ++i) {
    const auto& [var, extent] = list[rng() % list.size()];
    if (c.pieces(var) > 1) continue;
    int k = 1 << (1 + rng() % 3);  // 2, 4 or 8
    k = static_cast<int>(std::min<int64_t>({k, extent, budget}));
    if (k < 2) continue;
    c.splits.emplace_back(var, k);
    budget /= k;
  }
  c.devices.assign(perm.begin(), perm.begin() + c.num_shards());
  return c;
}

void check_model(const std::string& name, int changes) {
  auto path = (testing::shared_models_dir() / (name + ".onnx")).string();
  auto forward = importers::import_model(path);
  REQUIRE(forward.has_value());
  auto tg = build_training_graph(*forward, {});
  REQUIRE(tg.has_value());
  auto library = tdl::Library::builtin();
  REQUIRE(library.has_value());
  StrategyCache cache(*library);
  auto all = analyze_graph(cache, tg->graph, name);
  REQUIRE(all.has_value());
  importers::Topology topo = importers::h100_cluster(8);
  Lowering lowering(tg->graph, *all, topo);
  auto configs = baseline_configs(lowering, Baseline::kDataParallel, 8);
  REQUIRE(configs.has_value());
  auto plan = lowering.lower(*configs);
  REQUIRE(plan.has_value());
  auto sim = Simulation::create(std::move(plan->graph));
  REQUIRE(sim.has_value());
  std::mt19937 rng(12345);
  int applied = 0, total_groups = 0, total_tasks = 0;
  for (int i = 0; i < changes; ++i) {
    ir::OpId op = static_cast<ir::OpId>(rng() % static_cast<unsigned>(tg->graph.num_ops()));
    std::vector<OpConfig> next = *configs;
    next[static_cast<size_t>(op)] = random_config(lowering, op, 8, rng);
    auto target = lowering.lower(next);
    if (!target) continue;  // e.g. a config the operator's regions cannot take
    auto change = change_between(sim->graph(), target->graph);
    REQUIRE_MESSAGE(change.has_value(), (change ? "" : change.error().message()));
    total_groups += static_cast<int>(change->groups.size());
    total_tasks += static_cast<int>(change->tasks.size());
    auto ids = sim->apply(*change);
    REQUIRE_MESSAGE(ids.has_value(), (ids ? "" : ids.error().message()));
    ++applied;
    auto full = simulate(sim->graph());
    REQUIRE(full.has_value());
    CAPTURE(name);
    CAPTURE(i);
    CHECK(sim->step_time() == full->step_time);
    // The changed graph is the fresh lowering of the new plan, up to ids: nothing left to
    // change. (Its timeline can differ from the fresh graph's only where equal ready times
    // are broken by task id.)
    auto again = change_between(sim->graph(), target->graph);
    REQUIRE(again.has_value());
    CHECK(again->groups.empty());
    for (ResourceId r = 0; r < sim->graph().num_resources(); ++r)
      CHECK(sim->peak_memory(r) == full->resources[static_cast<size_t>(r)].peak_memory);
    if (rng() % 2) {
      sim->accept();
      *configs = next;
    } else {
      sim->revert();
    }
  }
  MESSAGE(name, ": ", applied, " single-operator changes, delta = full; on average ",
          total_groups / std::max(applied, 1), " groups and ", total_tasks / std::max(applied, 1),
          " tasks replaced of ", sim->graph().num_tasks());
  CHECK(applied > changes / 2);
}

TEST_CASE("delta simulation equals full simulation for single-operator changes") {
  PLANNER_REQUIRE_SHARED_MODELS();
  check_model("mlp_8192x4", 40);
  check_model("alexnet", 40);
  check_model("lstm_lm", 30);
  check_model("resnet50", 12);
}

}  // namespace
}  // namespace planner::analysis
