// TEMPORARY: the records lowering equals the reference lowering.
#include <random>

#include "analysis/lowering.h"
#include "analysis/simulator.h"
#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "tdl/library.h"
#include "tests/test_util.h"

namespace planner::analysis {
namespace {

OpConfig random_config(const Lowering& lowering, ir::OpId op, int devices, std::mt19937& rng) {
  const auto& vars = lowering.splittable(op);
  std::vector<int> perm(static_cast<size_t>(devices));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  OpConfig c;
  if (vars.empty() || rng() % 4 == 0) {
    int n = std::min(1 << (rng() % 4), devices);
    c.replicas = n;
    c.devices.assign(perm.begin(), perm.begin() + n);
    return c;
  }
  std::vector<std::pair<std::string, int64_t>> list(vars.begin(), vars.end());
  int budget = devices;
  int splits = 1 + static_cast<int>(rng() % 2);
  for (int i = 0; i < splits && budget > 1; ++i) {
    const auto& [var, extent] = list[rng() % list.size()];
    if (c.pieces(var) > 1) continue;
    int k = static_cast<int>(std::min<int64_t>({1 << (1 + rng() % 3), extent, budget}));
    if (k < 2) continue;
    c.splits.emplace_back(var, k);
    budget /= k;
  }
  c.devices.assign(perm.begin(), perm.begin() + c.num_shards());
  return c;
}

void same(const LoweredPlan& a, const LoweredPlan& b) {
  const TaskGraph& x = a.graph;
  const TaskGraph& y = b.graph;
  REQUIRE(x.task_capacity() == y.task_capacity());
  REQUIRE(x.buffer_capacity() == y.buffer_capacity());
  REQUIRE(x.num_groups() == y.num_groups());
  for (TaskId t = 0; t < x.task_capacity(); ++t) {
    const Task& p = x.task(t);
    const Task& q = y.task(t);
    CAPTURE(p.name);
    CAPTURE(q.name);
    REQUIRE(p.name == q.name);
    REQUIRE(p.resource == q.resource);
    REQUIRE(p.kind == q.kind);
    REQUIRE(p.duration == q.duration);
    REQUIRE(p.bytes == q.bytes);
    REQUIRE(p.op == q.op);
    REQUIRE(p.group == q.group);
    REQUIRE(x.preds(t) == y.preds(t));
    REQUIRE(x.succs(t) == y.succs(t));
  }
  for (BufferId i = 0; i < x.buffer_capacity(); ++i) {
    const Buffer& p = x.buffer(i);
    const Buffer& q = y.buffer(i);
    CAPTURE(p.name);
    REQUIRE(p.name == q.name);
    REQUIRE(p.resource == q.resource);
    REQUIRE(p.bytes == q.bytes);
    REQUIRE(p.producer == q.producer);
    REQUIRE(p.releasers == q.releasers);
    REQUIRE(p.group == q.group);
  }
  REQUIRE(a.comm_bytes == b.comm_bytes);
  REQUIRE(a.link_bytes == b.link_bytes);
  REQUIRE(a.op_group == b.op_group);
  REQUIRE(a.tensor_sharding.size() == b.tensor_sharding.size());
  for (size_t i = 0; i < a.tensor_sharding.size(); ++i) {
    REQUIRE(a.tensor_sharding[i].devices == b.tensor_sharding[i].devices);
    REQUIRE(a.tensor_sharding[i].tiles == b.tensor_sharding[i].tiles);
    REQUIRE(a.tensor_sharding[i].partial == b.tensor_sharding[i].partial);
    REQUIRE(a.tensor_sharding[i].replicas == b.tensor_sharding[i].replicas);
  }
  auto sa = simulate(x);
  auto sb = simulate(y);
  REQUIRE(sa.has_value());
  REQUIRE(sb.has_value());
  REQUIRE(sa->step_time == sb->step_time);
  REQUIRE(sa->start == sb->start);
}

void check_model(const std::string& name, int rounds, bool train) {
  auto path = (testing::shared_models_dir() / (name + ".onnx")).string();
  auto forward = importers::import_model(path);
  REQUIRE(forward.has_value());
  auto tg = build_training_graph(*forward, {});
  REQUIRE(tg.has_value());
  const ir::Graph& graph = train ? tg->graph : *forward;
  auto library = tdl::Library::builtin();
  REQUIRE(library.has_value());
  StrategyCache cache(*library);
  auto all = analyze_graph(cache, graph, name);
  REQUIRE(all.has_value());
  importers::Topology topo = importers::h100_cluster(16);
  Lowering lowering(graph, *all, topo);
  auto configs = baseline_configs(lowering, Baseline::kDataParallel, 16);
  REQUIRE(configs.has_value());
  std::mt19937 rng(5);
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(name);
    CAPTURE(round);
    auto a = lowering.lower_reference(*configs);
    auto b = lowering.lower(*configs);
    REQUIRE(a.has_value() == b.has_value());
    if (!a) {
      REQUIRE(a.error().message() == b.error().message());
    } else {
      same(*a, *b);
    }
    for (int k = 0; k < 1 + round; ++k) {
      ir::OpId op = static_cast<ir::OpId>(rng() % static_cast<unsigned>(graph.num_ops()));
      (*configs)[static_cast<size_t>(op)] = random_config(lowering, op, 16, rng);
    }
  }
}

TEST_CASE("records lowering equals reference") {
  PLANNER_REQUIRE_SHARED_MODELS();
  for (const char* m : {"mlp_8192x4", "alexnet", "lstm_lm", "resnet50", "gpt2_small", "bert_base"}) {
    check_model(m, 6, true);
    check_model(m, 3, false);
  }
}

}  // namespace
}  // namespace planner::analysis
