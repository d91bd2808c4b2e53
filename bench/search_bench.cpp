// Search time on the shared models (issue targets for GPT-2 small and ResNet-50, 16 H100s,
// training: dp under 1 s, frontier under 10 s): each search from a prepared model (import,
// training graph, strategies and groups done once, outside the timing) to its configs, and
// the step time of its plan against data parallelism's as counters. Skips when
// ../shared/models is absent.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>

#include "analysis/lowering.h"
#include "analysis/training_graph.h"
#include "bench/bench_models.h"
#include "importers/onnx_import.h"
#include "search/plan_builder.h"
#include "search/search.h"
#include "support/parallel.h"
#include "tdl/library.h"

namespace {

using namespace planner;

// A shared model on `gpus` H100s with its operator groups.
struct Prepared {
  const analysis::TrainingGraph& training;
  const importers::Topology* topology;
  const analysis::Lowering* lowering;
  std::unique_ptr<search::GroupSpace> space;
};

Prepared* prepare(const std::string& name, int gpus) {
  static std::map<std::pair<std::string, int>, std::unique_ptr<Prepared>> cache;
  auto key = std::make_pair(name, gpus);
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();
  const bench::SharedModel* m = bench::shared_model(name, gpus);
  if (!m) return nullptr;
  auto space = search::GroupSpace::create(*m->lowering, &m->training);
  if (!space) return nullptr;
  auto p =
      std::make_unique<Prepared>(Prepared{m->training, m->topology.get(), m->lowering.get(),
                                          std::make_unique<search::GroupSpace>(std::move(*space))});
  return cache.emplace(key, std::move(p)).first->second.get();
}

void run(benchmark::State& state, const std::string& model, const std::string& algorithm) {
  Prepared* p = prepare(model, static_cast<int>(state.range(0)));
  if (!p) {
    state.SkipWithError("../shared/models is absent");
    return;
  }
  auto info = search::find_search(algorithm);
  search::SearchOptions o;
  o.budget_s = 0;
  o.max_proposals = 500;
  o.memory_limit = search::default_memory_limit(*p->topology);
  o.threads = state.range(1) > 0 ? static_cast<int>(state.range(1)) : default_threads();
  state.counters["threads"] = o.threads;
  search::SearchContext context{*p->lowering, *p->space, &p->training};
  std::vector<analysis::OpConfig> configs;
  for (auto _ : state) {
    auto r = (*info)->run(context, o);
    if (!r) {
      state.SkipWithError(r.error().message().c_str());
      return;
    }
    configs = std::move(r->configs);
  }
  auto mine = search::evaluate_configs(*p->lowering, configs);
  auto dp = search::run_data_parallel(context, o);
  auto theirs = search::evaluate_configs(*p->lowering, dp->configs);
  if (mine && theirs) {
    state.counters["step_ms"] = mine->step_time_s * 1e3;
    state.counters["dp_step_ms"] = theirs->step_time_s * 1e3;
    state.counters["peak_GiB"] = static_cast<double>(mine->peak_memory_bytes) / (1 << 30);
    state.counters["dp_peak_GiB"] = static_cast<double>(theirs->peak_memory_bytes) / (1 << 30);
  }
}

#define SEARCH_BENCH(model, algorithm, name)                               \
  BENCHMARK_CAPTURE(run, name, std::string(model), std::string(algorithm)) \
      ->ArgNames({"gpus", "threads"})                                      \
      ->Args({16, 0})                                                      \
      ->Args({16, 1})                                                      \
      ->Args({8, 0})                                                       \
      ->Unit(benchmark::kMillisecond)                                      \
      ->Iterations(1)                                                      \
      ->UseRealTime()

SEARCH_BENCH("gpt2_small", "dp", dp / gpt2_small);
SEARCH_BENCH("resnet50", "dp", dp / resnet50);
SEARCH_BENCH("gpt2_small", "frontier", frontier / gpt2_small);
SEARCH_BENCH("resnet50", "frontier", frontier / resnet50);
SEARCH_BENCH("gpt2_small", "mcmc", mcmc500 / gpt2_small);
SEARCH_BENCH("resnet50", "mcmc", mcmc500 / resnet50);

}  // namespace

BENCHMARK_MAIN();
