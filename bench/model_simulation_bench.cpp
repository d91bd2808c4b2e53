// Benchmarks on the shared models: the data-parallel training step of each model on 16 H100s,
// lowered and simulated. Reports simulated tasks per second for full simulation, the time to
// lower a plan, and the cost of a search proposal (delta simulation alone, and
// PlanSimulation::propose + revert). Skips (with a message) when ../shared/models is absent.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <random>

#include "analysis/lowering.h"
#include "analysis/plan_delta.h"
#include "analysis/plan_simulation.h"
#include "analysis/simulator.h"
#include "analysis/training_graph.h"
#include "bench/bench_models.h"
#include "importers/onnx_import.h"
#include "tdl/library.h"

namespace {

using namespace planner;

// A shared model on 16 H100s with its data-parallel configs.
struct Prepared {
  const analysis::TrainingGraph& training;
  const analysis::Lowering* lowering;
  std::vector<analysis::OpConfig> configs;
};

// One prepared model per name, built on first use.
Prepared* prepare(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Prepared>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second.get();
  const bench::SharedModel* m = bench::shared_model(name, 16);
  if (!m) return nullptr;
  auto configs = analysis::baseline_configs(*m->lowering, analysis::Baseline::kDataParallel, 16);
  if (!configs) return nullptr;
  auto p =
      std::make_unique<Prepared>(Prepared{m->training, m->lowering.get(), std::move(*configs)});
  return cache.emplace(name, std::move(p)).first->second.get();
}

void BM_FullSimulation(benchmark::State& state, const std::string& name) {
  Prepared* p = prepare(name);
  if (!p) {
    state.SkipWithError("shared model absent or not importable");
    return;
  }
  auto plan = p->lowering->lower(p->configs);
  if (!plan) {
    state.SkipWithError(plan.error().message().c_str());
    return;
  }
  int64_t tasks = plan->graph.num_tasks();
  for (auto _ : state) {
    auto t = analysis::simulate(plan->graph);
    benchmark::DoNotOptimize(t);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["tasks_per_s"] = benchmark::Counter(
      static_cast<double>(tasks * state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Lowering(benchmark::State& state, const std::string& name) {
  Prepared* p = prepare(name);
  if (!p) {
    state.SkipWithError("shared model absent or not importable");
    return;
  }
  for (auto _ : state) {
    auto plan = p->lowering->lower(p->configs);
    benchmark::DoNotOptimize(plan);
  }
}

// Delta simulation of single-operator changes (each: a random new config of one operator,
// lowered, diffed into a Change) against full simulation of the same step, as a search pays
// per proposal: apply, read the step time, revert.
struct DeltaSetup {
  std::unique_ptr<analysis::Simulation> sim;
  std::vector<analysis::Change> changes;
  std::vector<analysis::TaskGraph> targets;  // the same proposals as whole task graphs
};

DeltaSetup* delta_setup(const std::string& name) {
  static std::map<std::string, std::unique_ptr<DeltaSetup>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  Prepared* p = prepare(name);
  if (!p) return nullptr;
  auto plan = p->lowering->lower(p->configs);
  if (!plan) return nullptr;
  auto sim = analysis::Simulation::create(std::move(plan->graph));
  if (!sim) return nullptr;
  auto setup = std::make_unique<DeltaSetup>();
  setup->sim = std::make_unique<analysis::Simulation>(std::move(*sim));
  std::mt19937 rng(7);
  const auto& g = p->training.graph;
  while (setup->changes.size() < 8) {
    ir::OpId op = static_cast<ir::OpId>(rng() % static_cast<unsigned>(g.num_ops()));
    const auto& vars = p->lowering->splittable(op);
    if (vars.empty()) continue;
    auto v = vars.begin();
    std::advance(v, static_cast<long>(rng() % vars.size()));
    int k = static_cast<int>(std::min<int64_t>(v->second, 1 << (1 + rng() % 4)));
    if (k < 2) continue;
    std::vector<analysis::OpConfig> next = p->configs;
    std::vector<int> devices(static_cast<size_t>(k));
    std::iota(devices.begin(), devices.end(),
              static_cast<int>(rng() % static_cast<unsigned>(17 - k)));
    next[static_cast<size_t>(op)] = analysis::OpConfig::split(v->first, devices);
    auto target = p->lowering->lower(next);
    if (!target) continue;
    auto change = analysis::change_between(setup->sim->graph(), target->graph);
    if (!change) continue;
    setup->changes.push_back(std::move(*change));
    setup->targets.push_back(std::move(target->graph));
  }
  return cache.emplace(name, std::move(setup)).first->second.get();
}

void BM_DeltaProposal(benchmark::State& state, const std::string& name) {
  DeltaSetup* d = delta_setup(name);
  if (!d) {
    state.SkipWithError("shared model absent or not importable");
    return;
  }
  size_t i = 0;
  for (auto _ : state) {
    auto ids = d->sim->apply(d->changes[i++ % d->changes.size()]);
    benchmark::DoNotOptimize(d->sim->step_time());
    d->sim->revert();
  }
}

void BM_FullProposal(benchmark::State& state, const std::string& name) {
  DeltaSetup* d = delta_setup(name);
  if (!d) {
    state.SkipWithError("shared model absent or not importable");
    return;
  }
  // The same proposals, each costed by a full (step time only) simulation of its task graph.
  size_t i = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(analysis::simulate_step_time(d->targets[i++ % d->targets.size()]));
}

// PlanSimulation::propose + revert of random single-operator changes (one random operator, a
// random valid config: one variable split 2..16 ways on consecutive devices, or replicated), as
// the MCMC search pays per rejected proposal. Reports the median over the iterations too.
void BM_Proposal(benchmark::State& state, const std::string& name) {
  Prepared* p = prepare(name);
  if (!p) {
    state.SkipWithError("shared model absent or not importable");
    return;
  }
  auto created = analysis::PlanSimulation::create(*p->lowering, p->configs);
  if (!created) {
    state.SkipWithError(created.error().message().c_str());
    return;
  }
  analysis::PlanSimulation& sim = *created;
  const auto& g = p->training.graph;
  std::mt19937 rng(11);
  // Pre-drawn proposals, so the loop times propose + revert only.
  std::vector<std::pair<ir::OpId, analysis::OpConfig>> proposals;
  while (proposals.size() < 64) {
    ir::OpId op = static_cast<ir::OpId>(rng() % static_cast<unsigned>(g.num_ops()));
    const auto& vars = p->lowering->splittable(op);
    analysis::OpConfig c;
    if (vars.empty() || rng() % 4 == 0) {
      int n = 1 << (rng() % 5);
      c = analysis::OpConfig::replicated({});
      c.replicas = n;
    } else {
      auto v = vars.begin();
      std::advance(v, static_cast<long>(rng() % vars.size()));
      int k = static_cast<int>(std::min<int64_t>(v->second, 1 << (1 + rng() % 4)));
      c.splits = {{v->first, k}};
    }
    int shards = c.num_shards();
    c.devices.resize(static_cast<size_t>(shards));
    std::iota(c.devices.begin(), c.devices.end(),
              static_cast<int>(rng() % static_cast<unsigned>(17 - shards)));
    if (!p->lowering->check_config(op, c)) continue;
    proposals.emplace_back(op, std::move(c));
  }
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  std::vector<double> wall, cpu;
  size_t i = 0;
  for (auto _ : state) {
    const auto& [op, c] = proposals[i++ % proposals.size()];
    auto begin = std::chrono::steady_clock::now();
    double cpu_begin = cpu_now();
    auto cost = sim.propose(op, c);
    if (cost) sim.revert();
    cpu.push_back(cpu_now() - cpu_begin);
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
    benchmark::DoNotOptimize(cost);
  }
  // Medians (a few proposals, those of update operators, re-simulate most of the step).
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  if (!wall.empty()) {
    state.counters["median_ms"] = 1e3 * wall[wall.size() / 2];
    state.counters["median_cpu_ms"] = 1e3 * cpu[cpu.size() / 2];
  }
}

const char* kModels[] = {"alexnet",    "vgg16",   "resnet50",         "inception_v3", "bert_base",
                         "gpt2_small", "lstm_lm", "lstm_lm_unrolled", "mlp_8192x4"};

int register_all() {
  for (const char* m : kModels) {
    benchmark::RegisterBenchmark((std::string("FullSimulation/") + m).c_str(), BM_FullSimulation, m)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("Lowering/") + m).c_str(), BM_Lowering, m)
        ->Unit(benchmark::kMillisecond);
  }
  for (const char* m : {"gpt2_small", "resnet50"}) {
    benchmark::RegisterBenchmark((std::string("DeltaProposal/") + m).c_str(), BM_DeltaProposal, m)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("FullProposal/") + m).c_str(), BM_FullProposal, m)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("Proposal/") + m).c_str(), BM_Proposal, m)
        ->Unit(benchmark::kMillisecond);
  }
  return 0;
}
const int kRegistered = register_all();

}  // namespace

BENCHMARK_MAIN();
