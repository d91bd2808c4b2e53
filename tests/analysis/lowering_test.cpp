// Tests for analysis/lowering.cpp: plans lowered to task graphs, costed and simulated.
#include "analysis/lowering.h"

#include <numeric>

#include "analysis/simulator.h"
#include "analysis/training_graph.h"
#include "tdl/library.h"
#include "tests/test_util.h"

namespace planner::analysis {
namespace {

using ir::TensorId;
using ir::TensorRole;

// SoyBean's worked example (section 2.2): five fully connected 300 x 300 layers, batch 400.
ir::Graph soybean_mlp() {
  ir::Graph g;
  g.name = "soybean";
  auto add = [&](const std::string& n, std::vector<int64_t> s, TensorRole r) {
    ir::Tensor t;
    t.name = n;
    t.shape = std::move(s);
    t.role = r;
    return g.add_tensor(std::move(t));
  };
  TensorId x = add("x", {400, 300}, TensorRole::kInput);
  for (int l = 0; l < 5; ++l) {
    TensorId w = add("w" + std::to_string(l), {300, 300}, TensorRole::kParameter);
    TensorId y = add("y" + std::to_string(l), {400, 300}, TensorRole::kActivation);
    ir::Op op;
    op.name = "fc" + std::to_string(l);
    op.op_type = "MatMul";
    op.inputs = {x, w};
    op.outputs = {y};
    g.add_op(std::move(op));
    x = y;
  }
  g.inputs = {g.tensors()[0].name == "x" ? TensorId{0} : TensorId{0}};
  g.outputs = {x};
  REQUIRE(g.finalize("soybean"));
  return g;
}

struct Fixture {
  TrainingGraph training;
  tdl::Library library;
  std::unique_ptr<StrategyCache> cache;
  GraphStrategies strategies;
};

Fixture prepare(const ir::Graph& forward) {
  Fixture f;
  auto tg = build_training_graph(forward, {});
  REQUIRE(tg.has_value());
  f.training = std::move(*tg);
  auto lib = tdl::Library::builtin();
  REQUIRE(lib.has_value());
  f.library = std::move(*lib);
  f.cache = std::make_unique<StrategyCache>(f.library);
  auto all = analyze_graph(*f.cache, f.training.graph, "soybean");
  REQUIRE_MESSAGE(all.has_value(), (all ? "" : all.error().message()));
  f.strategies = std::move(*all);
  return f;
}

const double kWeightBytes = 300.0 * 300 * 4;      // 360 KB per layer
const double kActivationBytes = 400.0 * 300 * 4;  // 480 KB per layer

TEST_CASE("SoyBean's MLP on 16 GPUs: data parallelism moves the ring all-reduce volume") {
  Fixture f = prepare(soybean_mlp());
  importers::Topology topo = importers::h100_cluster(16);
  Lowering lowering(f.training.graph, f.strategies, topo);
  auto dp = baseline_configs(lowering, Baseline::kDataParallel, 16);
  REQUIRE(dp.has_value());
  auto plan = lowering.lower(*dp);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message()));
  // A ring all-reduce of every weight gradient: each of the 16 devices sends 2 * 15 / 16 of
  // 360 KB per layer: 2 * 15 * 360 KB * 5 = 54.0 MB. SoyBean counts 57.6 MB = 2 * 16 * 1.8 MB:
  // every worker sends its whole gradient and receives the whole sum (a parameter server's
  // count), where a ring sends (n - 1) / n of it twice.
  CHECK(plan->comm_bytes == doctest::Approx(2.0 * 15 * kWeightBytes * 5));
  MESSAGE("data parallel: ", plan->comm_bytes / 1e6, " MB (SoyBean: 57.6 MB)");
  auto timeline = simulate(plan->graph);
  REQUIRE(timeline.has_value());
  CHECK(timeline->step_time > 0);
}

TEST_CASE("SoyBean's MLP on 16 GPUs: model parallelism and the 4 x 4 hybrid") {
  Fixture f = prepare(soybean_mlp());
  importers::Topology topo = importers::h100_cluster(16);
  Lowering lowering(f.training.graph, f.strategies, topo);
  const ir::Graph& g = f.training.graph;

  auto mp = baseline_configs(lowering, Baseline::kModelParallel, 16);
  REQUIRE(mp.has_value());
  auto mp_plan = lowering.lower(*mp);
  REQUIRE_MESSAGE(mp_plan.has_value(), (mp_plan ? "" : mp_plan.error().message()));
  MESSAGE("model parallel: ", mp_plan->comm_bytes / 1e6, " MB (SoyBean: 76.8 MB)");
  // Weights split by output column: activations move instead of weights. SoyBean counts 2 * 16
  // full activations per layer (76.8 MB); the lowering moves only the pieces each device lacks
  // (an all-gather of the forward activations, the reduction of the partial input gradients),
  // so it must stay within that volume and above zero.
  CHECK(mp_plan->comm_bytes > 0);
  CHECK(mp_plan->comm_bytes <= 2.0 * 16 * kActivationBytes * 5);

  // The hybrid: every forward MatMul split 4 ways along the batch and 4 along its output
  // columns, every backward op 4 ways along the batch times 4 along the weight's other side.
  std::vector<int> all(16);
  std::iota(all.begin(), all.end(), 0);
  auto dp = baseline_configs(lowering, Baseline::kDataParallel, 16);
  REQUIRE(dp.has_value());
  std::vector<OpConfig> hybrid = *dp;
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    const OpConfig& d = (*dp)[static_cast<size_t>(id)];
    const OpConfig& m = (*mp)[static_cast<size_t>(id)];
    if (d.splits.size() == 1 && m.splits.size() == 1 && d.splits[0].first != m.splits[0].first) {
      OpConfig h;
      h.splits = {{d.splits[0].first, 4}, {m.splits[0].first, 4}};
      h.devices = all;
      hybrid[static_cast<size_t>(id)] = h;
    }
  }
  auto hybrid_plan = lowering.lower(hybrid);
  REQUIRE_MESSAGE(hybrid_plan.has_value(), (hybrid_plan ? "" : hybrid_plan.error().message()));
  MESSAGE("4 x 4 hybrid: ", hybrid_plan->comm_bytes / 1e6, " MB (SoyBean: 33.6 MB)");
  auto dp_plan = lowering.lower(*dp);
  REQUIRE(dp_plan.has_value());
  CHECK(hybrid_plan->comm_bytes < dp_plan->comm_bytes);
}

TEST_CASE("the plan file's layouts without lowering are lower()'s") {
  Fixture f = prepare(soybean_mlp());
  importers::Topology topo = importers::h100_cluster(16);
  Lowering lowering(f.training.graph, f.strategies, topo);
  const ir::Graph& g = f.training.graph;
  for (Baseline b : {Baseline::kDataParallel, Baseline::kModelParallel}) {
    for (int n : {1, 4, 16}) {
      auto configs = baseline_configs(lowering, b, n);
      REQUIRE(configs.has_value());
      auto lowered = lowering.lower(*configs);
      REQUIRE(lowered.has_value());
      auto layouts = lowering.tensor_shardings(*configs);
      REQUIRE(layouts.has_value());
      CHECK(*layouts == lowered->tensor_sharding);
      // Some tensors alone: those, and nothing else.
      std::vector<char> only(static_cast<size_t>(g.num_tensors()), 0);
      for (size_t t = 0; t < only.size(); t += 3) only[t] = 1;
      auto some = lowering.tensor_shardings(*configs, &only);
      REQUIRE(some.has_value());
      for (size_t t = 0; t < only.size(); ++t)
        CHECK(((*some)[t] == (only[t] ? lowered->tensor_sharding[t] : Sharding{})));
    }
  }
}

TEST_CASE("a config that splits a missing variable is an error naming the node") {
  Fixture f = prepare(soybean_mlp());
  importers::Topology topo = importers::h100_cluster(2);
  Lowering lowering(f.training.graph, f.strategies, topo);
  std::vector<OpConfig> configs(static_cast<size_t>(f.training.graph.num_ops()),
                                OpConfig::single(0));
  configs[0] = OpConfig::split("q", {0, 1});
  auto plan = lowering.lower(configs);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().message() ==
        "node 'fc0' (MatMul): config {q:2}@0-1: 'q' is not a splittable index variable of the "
        "operator");
  configs[0] = OpConfig::split("m", {0, 5});
  plan = lowering.lower(configs);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().message() ==
        "node 'fc0' (MatMul): config {m:2}@0,5: device 5 is not among the topology's 2 devices");
}

TEST_CASE("one device: no communication, memory holds every buffer") {
  Fixture f = prepare(soybean_mlp());
  importers::Topology topo = importers::h100_cluster(1);
  Lowering lowering(f.training.graph, f.strategies, topo);
  std::vector<OpConfig> configs(static_cast<size_t>(f.training.graph.num_ops()),
                                OpConfig::single(0));
  auto plan = lowering.lower(configs);
  REQUIRE(plan.has_value());
  CHECK(plan->comm_bytes == 0);
  auto timeline = simulate(plan->graph);
  REQUIRE(timeline.has_value());
  int64_t peak = timeline->resources[static_cast<size_t>(plan->compute[0])].peak_memory;
  // At least the weights, the input and one weight gradient.
  CHECK(peak >= static_cast<int64_t>(5 * kWeightBytes + kActivationBytes + kWeightBytes));
  // At most everything at once.
  int64_t all_bytes = 0;
  for (const ir::Tensor& t : f.training.graph.tensors()) all_bytes += t.num_bytes();
  CHECK(peak <= all_bytes);
}

}  // namespace
}  // namespace planner::analysis
