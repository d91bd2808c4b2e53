// A model prepared for the searches in tests: training graph, strategies, topology, lowering,
// groups.
#pragma once

#include <memory>
#include <string>

#include <doctest/doctest.h>

#include "analysis/lowering.h"
#include "analysis/op_strategies.h"
#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "importers/topology.h"
#include "search/search.h"
#include "search/space.h"
#include "tdl/library.h"

namespace planner::testing {

struct SearchFixture {
  ir::Graph forward;
  analysis::TrainingGraph training;
  ir::Graph graph;  // planned: training.graph or forward
  bool train = true;
  std::unique_ptr<tdl::Library> library;
  std::unique_ptr<analysis::StrategyCache> cache;
  analysis::GraphStrategies strategies;
  std::unique_ptr<importers::Topology> topology;
  std::unique_ptr<analysis::Lowering> lowering;
  std::unique_ptr<search::GroupSpace> space;

  search::SearchContext context() const { return {*lowering, *space, train ? &training : nullptr}; }
};

/// Prepares `forward` (train or infer) on `topology`.
inline std::unique_ptr<SearchFixture> prepare_search(ir::Graph forward, importers::Topology topology,
                                                     bool train = true) {
  auto f = std::make_unique<SearchFixture>();
  f->forward = std::move(forward);
  f->train = train;
  if (train) {
    auto tg = analysis::build_training_graph(f->forward, {});
    REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
    f->training = std::move(*tg);
    f->graph = f->training.graph;
  } else {
    f->graph = f->forward;
  }
  auto lib = tdl::Library::builtin();
  REQUIRE(lib.has_value());
  f->library = std::make_unique<tdl::Library>(std::move(*lib));
  f->cache = std::make_unique<analysis::StrategyCache>(*f->library);
  auto all = analysis::analyze_graph(*f->cache, f->graph, "test");
  REQUIRE_MESSAGE(all.has_value(), (all ? "" : all.error().message()));
  f->strategies = std::move(*all);
  f->topology = std::make_unique<importers::Topology>(std::move(topology));
  f->lowering = std::make_unique<analysis::Lowering>(f->graph, f->strategies, *f->topology);
  auto space = search::GroupSpace::create(*f->lowering, train ? &f->training : nullptr);
  REQUIRE_MESSAGE(space.has_value(), (space ? "" : space.error().message()));
  f->space = std::make_unique<search::GroupSpace>(std::move(*space));
  return f;
}

/// Imports a model file and prepares it.
inline std::unique_ptr<SearchFixture> prepare_search_file(const std::string& path, importers::Topology topology,
                                                          bool train = true) {
  auto g = importers::import_model(path, {});
  REQUIRE_MESSAGE(g.has_value(), (g ? "" : g.error().message()));
  return prepare_search(std::move(*g), std::move(topology), train);
}

}  // namespace planner::testing
