// A planned model for the report tests: examples/mlp.onnxtxt (or a model in ONNX text) planned
// by a named search on H100s, its plan built and its step lowered and simulated.
#pragma once

#include <memory>
#include <string>

#include "analysis/simulator.h"
#include "search/plan_builder.h"
#include "tests/search/search_fixture.h"

namespace planner::report::testing {

/// A plan with everything the report draws from. Not movable: `prepared` is referenced.
struct Planned {
  std::unique_ptr<search::testing::Prepared> prepared;
  std::vector<analysis::OpConfig> configs;
  search::Plan plan;
  analysis::LoweredPlan lowered;
  analysis::Timeline timeline;
};

/// Plans `forward` on `gpus` H100s with search `search` (a name of search::searches()).
inline std::unique_ptr<Planned> plan_graph(ir::Graph forward, int gpus,
                                           const std::string& search = "dp") {
  auto out = std::make_unique<Planned>();
  out->prepared = search::testing::prepare(std::move(forward), importers::h100_cluster(gpus));
  const auto& p = *out->prepared;
  auto info = search::find_search(search);
  REQUIRE(info.has_value());
  search::SearchOptions options;
  options.memory_limit = search::default_memory_limit(*p.topology);
  options.budget_s = 0;
  options.fewer_devices = false;  // pictures of every GPU asked for
  auto result = (*info)->run(p.context(), options);
  REQUIRE_MESSAGE(result.has_value(), (result ? "" : result.error().message()));
  out->configs = result->configs;
  auto dp = search::run_data_parallel(p.context(), options);
  REQUIRE(dp.has_value());
  auto dp_metrics = search::evaluate_configs(*p.lowering, dp->configs);
  REQUIRE(dp_metrics.has_value());
  search::PlanHeader header;
  header.model = {p.forward.name, std::string(64, '0'), p.forward.num_ops(), ""};
  header.search.algorithm = search;
  auto plan = search::build_plan(*p.lowering, out->configs, p.train ? &p.training : nullptr, header,
                                 {{"data_parallel", *dp_metrics}});
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message()));
  out->plan = std::move(*plan);
  auto lowered = p.lowering->lower(out->configs);
  REQUIRE(lowered.has_value());
  out->lowered = std::move(*lowered);
  auto timeline = analysis::simulate(out->lowered.graph);
  REQUIRE(timeline.has_value());
  out->timeline = std::move(*timeline);
  return out;
}

/// examples/mlp.onnxtxt planned on `gpus` H100s.
inline std::unique_ptr<Planned> plan_mlp(int gpus, const std::string& search = "dp") {
  auto g = importers::import_model(
      (::planner::testing::source_dir() / "examples" / "mlp.onnxtxt").string());
  REQUIRE_MESSAGE(g.has_value(), (g ? "" : g.error().message()));
  return plan_graph(std::move(*g), gpus, search);
}

/// How often `needle` occurs in `text`.
inline int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

}  // namespace planner::report::testing
