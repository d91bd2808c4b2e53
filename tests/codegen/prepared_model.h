// The codegen tests' model, prepared as the pipeline does: import (an example or a graph built
// in code), the training graph, storage precision, strategies. Shared by the verify, precision
// and program-simulation tests.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "analysis/op_strategies.h"
#include "analysis/precision.h"
#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "ir/precision.h"
#include "tdl/library.h"
#include "tests/test_util.h"

namespace planner::codegen::testing_model {

struct Model {
  ir::Graph graph;
  std::unique_ptr<tdl::Library> library;
  std::unique_ptr<analysis::StrategyCache> cache;
  analysis::GraphStrategies strategies;
  bool train = false;
  analysis::TrainingGraph training;
  ir::Precision precision = ir::Precision::kFp32;
};

/// `forward` prepared for training (with `options`) or inference; with `precision`, its
/// storage types set as `--precision` does.
inline std::unique_ptr<Model> prepare(ir::Graph forward, bool train,
                                      std::optional<ir::Precision> precision = std::nullopt,
                                      const analysis::TrainingOptions& options = {}) {
  auto m = std::make_unique<Model>();
  m->train = train;
  if (train) {
    auto t = analysis::build_training_graph(forward, options);
    REQUIRE_MESSAGE(t.has_value(), t.error().message());
    m->training = *t;
    m->graph = std::move(t->graph);
  } else {
    m->graph = std::move(forward);
  }
  if (precision) {
    m->precision = *precision;
    analysis::apply_precision(m->graph, train ? &m->training : nullptr, *precision);
  }
  auto lib = tdl::Library::builtin();
  REQUIRE(lib.has_value());
  m->library = std::make_unique<tdl::Library>(std::move(*lib));
  m->cache = std::make_unique<analysis::StrategyCache>(*m->library);
  auto s = analysis::analyze_graph(*m->cache, m->graph, "test");
  REQUIRE_MESSAGE(s.has_value(), s.error().message());
  m->strategies = std::move(*s);
  return m;
}

/// examples/NAME.onnxtxt, prepared.
inline std::unique_ptr<Model> example(const std::string& name, bool train,
                                      std::optional<ir::Precision> precision = std::nullopt,
                                      const analysis::TrainingOptions& options = {}) {
  auto g = importers::import_model(
      (planner::testing::source_dir() / "examples" / (name + ".onnxtxt")).string());
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  return prepare(std::move(*g), train, precision, options);
}

}  // namespace planner::codegen::testing_model
