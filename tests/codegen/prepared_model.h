// The codegen tests' model, prepared as the pipeline does: import (an example or a graph built
// in code), the training graph, storage precision, strategies. Shared by the verify, precision
// and program-simulation tests.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "analysis/lowering.h"
#include "analysis/op_strategies.h"
#include "analysis/precision.h"
#include "analysis/training_graph.h"
#include "codegen/program.h"
#include "codegen/verify.h"
#include "importers/onnx_import.h"
#include "ir/precision.h"
#include "search/pipeline.h"
#include "search/search.h"
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

/// What `name` (a search or baseline of the search table) plans for `m` on `lowering`'s
/// devices: no time budget (mcmc stops after `proposals`), the devices' memory, with or without
/// the blocks of fewer devices; with `stages` > 1, inside that many pipeline stages.
struct SearchRun {
  int64_t proposals = 100;
  bool fewer_devices = true;
  int stages = 1;
};
inline std::vector<analysis::OpConfig> searched_configs(const Model& m,
                                                        const analysis::Lowering& lowering,
                                                        const std::string& name,
                                                        const SearchRun& run = {}) {
  const analysis::TrainingGraph* training = m.train ? &m.training : nullptr;
  auto space = search::GroupSpace::create(lowering, training);
  REQUIRE_MESSAGE(space.has_value(), space.error().message());
  auto info = search::find_search(name);
  REQUIRE_MESSAGE(info.has_value(), info.error().message());
  search::SearchOptions o;
  o.budget_s = 0;
  o.max_proposals = run.proposals;
  o.fewer_devices = run.fewer_devices;
  o.memory_limit = search::default_memory_limit(lowering.topology());
  auto r = search::run_pipelined(**info, {lowering, *space, training}, o, run.stages);
  REQUIRE_MESSAGE(r.has_value(), r.error().message());
  return r->configs;
}

/// A batch-first MLP with a LayerNorm: no operator mixes the rows of a batch, so micro-batches,
/// pipelines and replicas of it compute what one pass over the whole batch does.
inline constexpr const char* kBatchFirstNet = R"(<ir_version: 8, opset_import: ["" : 17]>
net (float[batch,16] x) => (float[batch,8] y)
<float[16,32] w1 = {}, float[32] b1 = {}, float[32] g = {}, float[32] be = {}, float[32,8] w2 = {}>
{
  h = MatMul(x, w1)
  hb = Add(h, b1)
  n = LayerNormalization<axis = -1>(hb, g, be)
  a = Relu(n)
  y = MatMul(a, w2)
}
)";

/// Keeps only the outputs that are updated parameters and optimizer state (the model's output
/// is the last pass's rows, which a step of several passes does not compare): how many.
inline size_t keep_updated_outputs(Programs& p) {
  std::vector<int> kept;
  for (int b : p.outputs)
    if (p.buffers[static_cast<size_t>(b)].tensor_name.ends_with(":updated")) kept.push_back(b);
  p.outputs = kept;
  return kept.size();
}

/// Runs `plans` and `reference` (verify_programs) and checks that each plan agrees, comparing
/// at least `min_tensors` tensors, and, given `max_rel` > 0, within that relative error.
inline void check_all_agree(const Programs& reference, const std::vector<Programs>& plans,
                            size_t min_tensors, double max_rel = 0) {
  auto results = verify_programs(reference, plans, VerifyOptions{});
  REQUIRE_MESSAGE(results.has_value(), results.error().message());
  for (const VerifyResult& r : *results) {
    INFO(r.comparison.problem, " worst '", r.comparison.worst, "' max rel ", r.comparison.max_rel);
    CHECK(r.comparison.ok);
    CHECK(static_cast<size_t>(r.comparison.tensors) >= min_tensors);
    if (max_rel > 0) CHECK(r.comparison.max_rel < max_rel);
  }
}

/// kBatchFirstNet at `batch`, prepared for training with `optimizer`.
inline std::unique_ptr<Model> batch_first_net(
    int64_t batch, analysis::Optimizer optimizer = analysis::Optimizer::kMomentum) {
  importers::ImportOptions o;
  o.batch = batch;
  auto g = importers::import_model_text(kBatchFirstNet, "net.onnxtxt", o);
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  analysis::TrainingOptions t;
  t.optimizer = optimizer;
  return prepare(std::move(*g), true, std::nullopt, t);
}

}  // namespace planner::codegen::testing_model
