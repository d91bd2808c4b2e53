// Benchmarks on the shared models: the data-parallel training step of each model on 16 H100s,
// lowered and simulated. Reports simulated tasks per second for full simulation and the time
// to lower a plan. Skips (with a message) when ../shared/models is absent.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>

#include "analysis/lowering.h"
#include "analysis/simulator.h"
#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "tdl/library.h"

namespace {

using namespace planner;

struct Prepared {
  analysis::TrainingGraph training;
  std::unique_ptr<tdl::Library> library;
  std::unique_ptr<analysis::StrategyCache> cache;
  analysis::GraphStrategies strategies;
  std::optional<importers::Topology> topology;
  std::unique_ptr<analysis::Lowering> lowering;
  std::vector<analysis::OpConfig> configs;
};

std::filesystem::path models_dir() {
  return std::filesystem::path(PLANNER_SHARED_DIR) / "models";
}

// One prepared model per name, built on first use.
Prepared* prepare(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Prepared>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  auto path = models_dir() / (name + ".onnx");
  if (!std::filesystem::exists(path)) return nullptr;
  auto p = std::make_unique<Prepared>();
  auto forward = importers::import_model(path.string());
  if (!forward) return nullptr;
  auto tg = analysis::build_training_graph(*forward, {});
  if (!tg) return nullptr;
  p->training = std::move(*tg);
  auto lib = tdl::Library::builtin();
  if (!lib) return nullptr;
  p->library = std::make_unique<tdl::Library>(std::move(*lib));
  p->cache = std::make_unique<analysis::StrategyCache>(*p->library);
  auto all = analysis::analyze_graph(*p->cache, p->training.graph, name);
  if (!all) return nullptr;
  p->strategies = std::move(*all);
  p->topology.emplace(importers::h100_cluster(16));
  p->lowering = std::make_unique<analysis::Lowering>(p->training.graph, p->strategies, *p->topology);
  auto configs = analysis::baseline_configs(*p->lowering, analysis::Baseline::kDataParallel, 16);
  if (!configs) return nullptr;
  p->configs = std::move(*configs);
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
  state.counters["tasks_per_s"] =
      benchmark::Counter(static_cast<double>(tasks * state.iterations()), benchmark::Counter::kIsRate);
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

const char* kModels[] = {"alexnet", "vgg16", "resnet50", "inception_v3", "bert_base", "gpt2_small",
                         "lstm_lm", "lstm_lm_unrolled", "mlp_8192x4"};

int register_all() {
  for (const char* m : kModels) {
    benchmark::RegisterBenchmark((std::string("FullSimulation/") + m).c_str(), BM_FullSimulation, m)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("Lowering/") + m).c_str(), BM_Lowering, m)
        ->Unit(benchmark::kMillisecond);
  }
  return 0;
}
const int kRegistered = register_all();

}  // namespace

BENCHMARK_MAIN();
