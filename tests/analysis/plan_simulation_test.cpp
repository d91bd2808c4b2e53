// Tests for analysis/plan_simulation.cpp: after any sequence of single-operator proposals,
// accepts and reverts, the cost equals lowering and simulating the plan from scratch, bit for
// bit (step time, every device's peak memory, bytes sent).
#include "analysis/plan_simulation.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "tdl/library.h"
#include "tests/test_util.h"

namespace planner::analysis {
namespace {

// A random configuration of `op` on a random subset of `devices` GPUs: replicated, or one or two
// variables split (any piece count up to the extent), possibly with replicas.
OpConfig random_config(const Lowering& lowering, ir::OpId op, int devices, std::mt19937& rng) {
  const auto& vars = lowering.splittable(op);
  std::vector<int> perm(static_cast<size_t>(devices));
  std::iota(perm.begin(), perm.end(), 0);
  if (rng() % 2) std::shuffle(perm.begin(), perm.end(), rng);
  OpConfig c;
  int budget = devices;
  if (!vars.empty() && rng() % 5 != 0) {
    std::vector<std::pair<std::string, int64_t>> list(vars.begin(), vars.end());
    int splits = 1 + static_cast<int>(rng() % 2);
    for (int i = 0; i < splits && budget > 1; ++i) {
      const auto& [var, extent] = list[rng() % list.size()];
      if (c.pieces(var) > 1) continue;
      int k = rng() % 3 == 0 ? 2 + static_cast<int>(rng() % 7) : 1 << (1 + rng() % 4);
      k = static_cast<int>(std::min<int64_t>({k, extent, budget}));
      if (k < 2) continue;
      c.splits.emplace_back(var, k);
      budget /= k;
    }
  }
  if (budget > 1 && rng() % 3 == 0) c.replicas = 1 + static_cast<int>(rng() % std::min(budget, 4));
  c.devices.assign(perm.begin(), perm.begin() + c.num_shards());
  return c;
}

// The cost of `configs` lowered and simulated from scratch, per device peaks in `peaks`.
PlanCost fresh_cost(const Lowering& lowering, const std::vector<OpConfig>& configs,
                    std::vector<int64_t>& peaks) {
  auto plan = lowering.lower(configs);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message()));
  auto timeline = simulate(plan->graph);
  REQUIRE(timeline.has_value());
  PlanCost c;
  c.step_time = timeline->step_time;
  c.comm_bytes = plan->comm_bytes;
  peaks.clear();
  for (ResourceId r : plan->compute) {
    peaks.push_back(timeline->resources[static_cast<size_t>(r)].peak_memory);
    c.peak_memory = std::max(c.peak_memory, peaks.back());
  }
  return c;
}

void check_equal(const PlanSimulation& sim, const PlanCost& fresh,
                 const std::vector<int64_t>& peaks) {
  PlanCost c = sim.cost();
  CHECK(c.step_time == fresh.step_time);
  CHECK(c.peak_memory == fresh.peak_memory);
  CHECK(c.comm_bytes == fresh.comm_bytes);
  CHECK(sim.device_peak_memory() == peaks);
}

// `proposals` random single-operator proposals on `graph` over `devices` GPUs, starting from a
// baseline, each checked against a fresh lowering, then kept or dropped at random.
void check_graph(const std::string& name, const ir::Graph& graph, int devices, Baseline start,
                 int proposals, uint32_t seed) {
  CAPTURE(name);
  auto library = tdl::Library::builtin();
  REQUIRE(library.has_value());
  StrategyCache cache(*library);
  auto all = analyze_graph(cache, graph, name);
  REQUIRE(all.has_value());
  importers::Topology topology = importers::h100_cluster(devices);
  Lowering lowering(graph, *all, topology);
  auto configs = baseline_configs(lowering, start, devices);
  REQUIRE(configs.has_value());
  auto sim = PlanSimulation::create(lowering, *configs);
  REQUIRE_MESSAGE(sim.has_value(), (sim ? "" : sim.error().message()));
  std::vector<int64_t> peaks;
  PlanCost before = fresh_cost(lowering, sim->configs(), peaks);
  check_equal(*sim, before, peaks);
  std::vector<int64_t> peaks_before = peaks;
  std::mt19937 rng(seed);
  int applied = 0, accepted = 0;
  for (int i = 0; i < proposals; ++i) {
    CAPTURE(i);
    auto op = static_cast<ir::OpId>(rng() % static_cast<unsigned>(graph.num_ops()));
    OpConfig config = random_config(lowering, op, devices, rng);
    CAPTURE(graph.op(op).name);
    CAPTURE(config.to_string());
    std::vector<OpConfig> old_configs = sim->configs();
    auto cost = sim->propose(op, config);
    if (!cost) {
      // A config the operator's regions cannot take: nothing changes.
      CHECK_FALSE(sim->has_pending());
      CHECK(sim->configs() == old_configs);
      check_equal(*sim, before, peaks_before);
      continue;
    }
    ++applied;
    REQUIRE(sim->has_pending());
    CHECK(sim->configs()[static_cast<size_t>(op)] == config);
    PlanCost fresh = fresh_cost(lowering, sim->configs(), peaks);
    CHECK(cost->step_time == fresh.step_time);
    check_equal(*sim, fresh, peaks);
    if (rng() % 2) {
      sim->accept();
      ++accepted;
      before = fresh;
      peaks_before = peaks;
    } else {
      sim->revert();
      CHECK(sim->configs() == old_configs);
      check_equal(*sim, before, peaks_before);
    }
    CHECK_FALSE(sim->has_pending());
  }
  // The plan after all of it, from scratch once more.
  before = fresh_cost(lowering, sim->configs(), peaks);
  check_equal(*sim, before, peaks);
  MESSAGE(name, ": ", applied, " proposals equal a fresh lowering, ", accepted, " accepted");
  CHECK(applied > proposals / 2);
}

ir::Graph import(const std::filesystem::path& path) {
  auto graph = importers::import_model(path.string());
  REQUIRE_MESSAGE(graph.has_value(), (graph ? "" : graph.error().message()));
  return std::move(*graph);
}

ir::Graph training(const ir::Graph& forward) {
  auto tg = build_training_graph(forward, {});
  REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
  return std::move(tg->graph);
}

TEST_CASE("proposals equal a fresh lowering: in-repo example models") {
  for (const char* m : {"mlp", "small_cnn", "lstm", "transformer_block"}) {
    ir::Graph forward = import(testing::source_dir() / "examples" / (std::string(m) + ".onnxtxt"));
    check_graph(std::string(m) + " (inference, 4 GPUs)", forward, 4, Baseline::kDataParallel, 80,
                1);
    ir::Graph train = training(forward);
    check_graph(std::string(m) + " (training, 8 GPUs)", train, 8, Baseline::kDataParallel, 80, 2);
    check_graph(std::string(m) + " (training, 8 GPUs, model parallel)", train, 8,
                Baseline::kModelParallel, 60, 3);
  }
}

TEST_CASE("proposals equal a fresh lowering: shared models, training on 16 GPUs") {
  PLANNER_REQUIRE_SHARED_MODELS();
  struct Case {
    const char* model;
    int proposals;
  };
  for (const Case& c : {Case{"mlp_8192x4", 60}, Case{"alexnet", 40}, Case{"lstm_lm", 30},
                        Case{"resnet50", 25}, Case{"gpt2_small", 20}, Case{"bert_base", 12}}) {
    ir::Graph train =
        training(import(testing::shared_models_dir() / (std::string(c.model) + ".onnx")));
    check_graph(std::string(c.model) + " (training, 16 GPUs)", train, 16, Baseline::kDataParallel,
                c.proposals, 7);
  }
  ir::Graph train = training(import(testing::shared_models_dir() / "gpt2_small.onnx"));
  check_graph("gpt2_small (training, 16 GPUs, model parallel)", train, 16, Baseline::kModelParallel,
              12, 9);
}

}  // namespace
}  // namespace planner::analysis
