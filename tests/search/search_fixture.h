// A model prepared for the searches, as the pipeline prepares it: imported (ONNX text or a
// file), the training step built, strategies analysed, lowered on a topology, grouped.
#pragma once

#include <memory>
#include <string>

#include "analysis/lowering.h"
#include "analysis/op_strategies.h"
#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "importers/topology.h"
#include "search/search.h"
#include "tdl/library.h"
#include "tests/test_util.h"

namespace planner::search::testing {

/// Everything a SearchContext points into. Not movable: members reference each other.
struct Prepared {
  ir::Graph forward;
  analysis::TrainingGraph training;
  bool train = true;
  tdl::Library library;
  std::unique_ptr<analysis::StrategyCache> cache;
  analysis::GraphStrategies strategies;
  std::unique_ptr<importers::Topology> topology;
  std::unique_ptr<analysis::Lowering> lowering;
  std::unique_ptr<GroupSpace> space;

  const ir::Graph& graph() const { return train ? training.graph : forward; }
  SearchContext context() const { return {*lowering, *space, train ? &training : nullptr}; }
};

/// Prepares `forward` on `topology`; REQUIREs every stage to succeed.
inline std::unique_ptr<Prepared> prepare(ir::Graph forward, importers::Topology topology,
                                         bool train = true) {
  auto p = std::make_unique<Prepared>();
  p->forward = std::move(forward);
  p->train = train;
  if (train) {
    auto tg = analysis::build_training_graph(p->forward, {});
    REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
    p->training = std::move(*tg);
  }
  auto lib = tdl::Library::builtin();
  REQUIRE(lib.has_value());
  p->library = std::move(*lib);
  p->cache = std::make_unique<analysis::StrategyCache>(p->library);
  auto all = analysis::analyze_graph(*p->cache, p->graph(), p->forward.name);
  REQUIRE_MESSAGE(all.has_value(), (all ? "" : all.error().message()));
  p->strategies = std::move(*all);
  p->topology = std::make_unique<importers::Topology>(std::move(topology));
  p->lowering = std::make_unique<analysis::Lowering>(p->graph(), p->strategies, *p->topology);
  auto space = GroupSpace::create(*p->lowering, train ? &p->training : nullptr);
  REQUIRE_MESSAGE(space.has_value(), (space ? "" : space.error().message()));
  p->space = std::make_unique<GroupSpace>(std::move(*space));
  return p;
}

/// Imports a model written in ONNX's textual syntax.
inline ir::Graph import_text(const std::string& text) {
  auto g = importers::import_model_text(text, "test.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), (g ? "" : g.error().message()));
  return std::move(*g);
}

}  // namespace planner::search::testing
