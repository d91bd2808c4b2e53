// Benchmarks of the execution simulator on synthetic training steps: full simulation throughput,
// and delta against full simulation for random reconfigurations of one operator (an MCMC
// proposal), on 16 GPUs in two nodes with transfers on their own links.
//
//   build/bench/simulator_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "analysis/simulator.h"

namespace planner::analysis {
namespace {

constexpr int kDevices = 16;
constexpr int kDevicesPerNode = 8;
constexpr double kNvlinkBytesPerSecond = 150e9;
constexpr double kNetworkBytesPerSecond = 25e9;

/// How an operator is split: `degree` slices, slice j on device (first_device + j) mod 16.
struct OpConfig {
  int degree = 1;
  int first_device = 0;
};

/// A synthetic model (forward chain with residual edges, mirrored backward pass that reads the
/// forward activations), a plan (one config per operator) and its lowering into a task graph:
/// per operator one group (its compute tasks and output buffers), per operator edge one group
/// (its transfers and received buffers), like the plan lowering the search will use.
class SyntheticStep {
 public:
  SyntheticStep(int num_ops, uint32_t seed) : rng_(seed) {
    int forward = num_ops / 2;
    std::uniform_real_distribution<double> log_seconds(std::log(50e-6), std::log(1e-3));
    std::uniform_real_distribution<double> log_bytes(std::log(1e6), std::log(64e6));
    for (int i = 0; i < 2 * forward; ++i) {
      bool backward = i >= forward;
      seconds_.push_back(std::exp(log_seconds(rng_)) * (backward ? 2.0 : 1.0));
      out_bytes_.push_back(static_cast<int64_t>(std::exp(log_bytes(rng_))));
    }
    auto bwd = [&](int f) { return forward + (forward - 1 - f); };  // backward op of forward f
    for (int f = 0; f + 1 < forward; ++f) edges_.push_back({f, f + 1});
    for (int f = 0; f + 3 < forward; f += 4) edges_.push_back({f, f + 3});  // residual
    edges_.push_back({forward - 1, bwd(forward - 1)});
    for (int f = forward - 1; f > 0; --f) edges_.push_back({bwd(f), bwd(f - 1)});
    for (int f = 0; f + 1 < forward; ++f) edges_.push_back({f, bwd(f)});  // saved activation
    op_edges_.resize(seconds_.size());
    for (int e = 0; e < static_cast<int>(edges_.size()); ++e) {
      op_edges_[static_cast<size_t>(edges_[e].first)].push_back(e);
      op_edges_[static_cast<size_t>(edges_[e].second)].push_back(e);
    }

    for (int d = 0; d < kDevices; ++d)
      gpu_.push_back(graph_.add_resource(
          {"gpu" + std::to_string(d), ResourceKind::kDevice, d / kDevicesPerNode}));
    link_.assign(kDevices * kDevices, kNoResource);
    for (int a = 0; a < kDevices; ++a)
      for (int b = 0; b < kDevices; ++b)
        if (a != b && a / kDevicesPerNode == b / kDevicesPerNode)
          link_[static_cast<size_t>(a * kDevices + b)] = graph_.add_resource(
              {fmt::format("gpu{}->gpu{}", a, b), ResourceKind::kLink, a / kDevicesPerNode});
    ResourceId net01 = graph_.add_resource({"node0->node1", ResourceKind::kLink, -1});
    ResourceId net10 = graph_.add_resource({"node1->node0", ResourceKind::kLink, -1});
    for (int a = 0; a < kDevices; ++a)
      for (int b = 0; b < kDevices; ++b)
        if (a / kDevicesPerNode != b / kDevicesPerNode)
          link_[static_cast<size_t>(a * kDevices + b)] = a < b ? net01 : net10;

    for (int i = 0; i < num_ops_(); ++i)
      op_group_.push_back(graph_.add_group("op" + std::to_string(i)));
    for (int e = 0; e < static_cast<int>(edges_.size()); ++e)
      edge_group_.push_back(graph_.add_group("edge" + std::to_string(e)));
    for (int i = 0; i < num_ops_(); ++i) config_.push_back(random_config());
    compute_.resize(seconds_.size());
    outputs_.resize(seconds_.size());
    empty_ = graph_;

    all_ops_.resize(seconds_.size());
    all_edges_.resize(edges_.size());
    for (size_t i = 0; i < all_ops_.size(); ++i) all_ops_[i] = static_cast<int>(i);
    for (size_t e = 0; e < all_edges_.size(); ++e) all_edges_[e] = static_cast<int>(e);
    Proposal initial = lower(all_ops_, all_edges_, config_);
    auto applied = graph_.apply(initial.change);
    PLANNER_CHECK(applied.has_value(), "{}", applied.has_value() ? "" : applied.error().message());
    record({applied->new_tasks, applied->new_buffers}, initial);
  }

  const TaskGraph& graph() const { return graph_; }

  /// A change to one operator's configuration, ready to apply to the current graph.
  struct Proposal {
    Change change;
    int op = -1;
    OpConfig config;
    // Where the lowered ops' compute tasks and outputs sit in change.tasks / change.buffers.
    std::vector<std::vector<int32_t>> compute_index, output_index;
    std::vector<int> ops;
  };

  /// Proposes a new configuration for a random operator.
  Proposal propose() {
    int op = static_cast<int>(rng_() % seconds_.size());
    std::vector<OpConfig> configs = config_;
    configs[static_cast<size_t>(op)] = random_config();
    Proposal p = lower({op}, op_edges_[static_cast<size_t>(op)], configs);
    p.op = op;
    p.config = configs[static_cast<size_t>(op)];
    return p;
  }

  /// The task graph of the whole plan with `p` applied, lowered from scratch: what FlexFlow's
  /// full simulation pays before Algorithm 1 (BUILD_TASK_GRAPH).
  TaskGraph rebuild(const Proposal& p) {
    std::vector<OpConfig> configs = config_;
    configs[static_cast<size_t>(p.op)] = p.config;
    TaskGraph graph = empty_;
    auto applied = graph.apply(lower(all_ops_, all_edges_, configs).change);
    PLANNER_CHECK(applied.has_value(), "rebuild failed");
    return graph;
  }

  /// Records the ids an accepted proposal got.
  void record(const NewIds& ids, const Proposal& p) {
    for (size_t k = 0; k < p.ops.size(); ++k) {
      auto op = static_cast<size_t>(p.ops[k]);
      compute_[op].clear();
      outputs_[op].clear();
      for (int32_t i : p.compute_index[k])
        compute_[op].push_back(ids.tasks[static_cast<size_t>(i)]);
      for (int32_t i : p.output_index[k])
        outputs_[op].push_back(ids.buffers[static_cast<size_t>(i)]);
    }
    if (p.op >= 0) config_[static_cast<size_t>(p.op)] = p.config;
  }

 private:
  int num_ops_() const { return static_cast<int>(seconds_.size()); }

  /// Mostly wide splits; the first device is arbitrary (slice j runs on device first + j mod
  /// 16), so neighbouring operators rarely line up and most edges need transfers.
  OpConfig random_config() {
    static constexpr int kDegrees[] = {16, 16, 16, 16, 16, 8, 8, 8, 4, 2, 1};
    int degree = kDegrees[rng_() % std::size(kDegrees)];
    return {degree, static_cast<int>(rng_() % kDevices)};
  }

  /// Lowers the compute tasks of `ops` and the transfers of `edge_ids` under `configs`. Tasks of
  /// other operators are referred to by their current ids.
  Proposal lower(const std::vector<int>& ops, const std::vector<int>& edge_ids,
                 const std::vector<OpConfig>& configs) {
    Proposal p;
    p.ops = ops;
    Change& c = p.change;
    std::vector<int> slot(seconds_.size(), -1);  // op -> index in ops
    for (size_t k = 0; k < ops.size(); ++k) {
      int op = ops[k];
      slot[static_cast<size_t>(op)] = static_cast<int>(k);
      c.groups.push_back(op_group_[static_cast<size_t>(op)]);
      const OpConfig& cfg = configs[static_cast<size_t>(op)];
      std::vector<int32_t> tasks, outs;
      for (int j = 0; j < cfg.degree; ++j) {
        int dev = (cfg.first_device + j) % kDevices;
        Task t;
        t.name = fmt::format("op{}[{}]", op, j);
        t.resource = gpu_[static_cast<size_t>(dev)];
        // Smaller slices use the device less well.
        t.duration = seconds_[static_cast<size_t>(op)] / cfg.degree *
                     (1.0 + 0.05 * std::log2(static_cast<double>(cfg.degree)));
        t.op = op;
        t.group = op_group_[static_cast<size_t>(op)];
        tasks.push_back(static_cast<int32_t>(c.tasks.size()));
        c.tasks.push_back(std::move(t));
        ChangeBuffer b;
        b.name = fmt::format("out{}[{}]", op, j);
        b.resource = gpu_[static_cast<size_t>(dev)];
        b.bytes = out_bytes_[static_cast<size_t>(op)] / cfg.degree;
        b.producer = TaskRef::added(tasks.back());
        b.group = op_group_[static_cast<size_t>(op)];
        outs.push_back(static_cast<int32_t>(c.buffers.size()));
        c.buffers.push_back(std::move(b));
      }
      p.compute_index.push_back(std::move(tasks));
      p.output_index.push_back(std::move(outs));
    }
    auto task_ref = [&](int op, int j) {
      int k = slot[static_cast<size_t>(op)];
      return k >= 0
                 ? TaskRef::added(p.compute_index[static_cast<size_t>(k)][static_cast<size_t>(j)])
                 : TaskRef::existing(compute_[static_cast<size_t>(op)][static_cast<size_t>(j)]);
    };
    auto release = [&](int op, int j, TaskRef by) {
      int k = slot[static_cast<size_t>(op)];
      if (k >= 0)
        c.buffers[static_cast<size_t>(
                      p.output_index[static_cast<size_t>(k)][static_cast<size_t>(j)])]
            .releasers.push_back(by);
      else
        c.releases.push_back({outputs_[static_cast<size_t>(op)][static_cast<size_t>(j)], by});
    };
    for (int e : edge_ids) {
      auto [a, b] = edges_[static_cast<size_t>(e)];
      GroupId group = edge_group_[static_cast<size_t>(e)];
      c.groups.push_back(group);
      const OpConfig& ca = configs[static_cast<size_t>(a)];
      const OpConfig& cb = configs[static_cast<size_t>(b)];
      // Consumer slice j of b reads the overlapping producer slices i of a.
      for (int j = 0; j < cb.degree; ++j) {
        for (int i = 0; i < ca.degree; ++i) {
          double lo =
              std::max(static_cast<double>(i) / ca.degree, static_cast<double>(j) / cb.degree);
          double hi = std::min(static_cast<double>(i + 1) / ca.degree,
                               static_cast<double>(j + 1) / cb.degree);
          if (hi <= lo) continue;
          int src = (ca.first_device + i) % kDevices, dst = (cb.first_device + j) % kDevices;
          TaskRef producer = task_ref(a, i), consumer = task_ref(b, j);
          if (src == dst) {
            c.edges.push_back({producer, consumer});
            release(a, i, consumer);
            continue;
          }
          auto bytes = static_cast<int64_t>(
              static_cast<double>(out_bytes_[static_cast<size_t>(a)]) * (hi - lo));
          bool same_node = src / kDevicesPerNode == dst / kDevicesPerNode;
          Task t;
          t.name = fmt::format("x{}:{}->{}", e, src, dst);
          t.resource = link_[static_cast<size_t>(src * kDevices + dst)];
          t.kind = TaskKind::kComm;
          t.bytes = bytes;
          t.duration = static_cast<double>(bytes) /
                       (same_node ? kNvlinkBytesPerSecond : kNetworkBytesPerSecond);
          t.group = group;
          auto comm = TaskRef::added(static_cast<int32_t>(c.tasks.size()));
          c.tasks.push_back(std::move(t));
          c.edges.push_back({producer, comm});
          c.edges.push_back({comm, consumer});
          release(a, i, comm);
          ChangeBuffer in;
          in.name = fmt::format("in{}:{}", e, dst);
          in.resource = gpu_[static_cast<size_t>(dst)];
          in.bytes = bytes;
          in.producer = comm;
          in.releasers.push_back(consumer);
          in.group = group;
          c.buffers.push_back(std::move(in));
        }
      }
    }
    return p;
  }

  std::mt19937 rng_;
  std::vector<double> seconds_;
  std::vector<int64_t> out_bytes_;
  std::vector<std::pair<int, int>> edges_;
  std::vector<std::vector<int>> op_edges_;
  TaskGraph graph_;
  TaskGraph empty_;  // resources and groups only
  std::vector<int> all_ops_, all_edges_;
  std::vector<ResourceId> gpu_, link_;
  std::vector<GroupId> op_group_, edge_group_;
  std::vector<OpConfig> config_;
  std::vector<std::vector<TaskId>> compute_;
  std::vector<std::vector<BufferId>> outputs_;
};

constexpr uint32_t kSeed = 42;

void BM_FullSimulationStepTime(benchmark::State& state) {
  SyntheticStep step(static_cast<int>(state.range(0)), kSeed);
  for (auto _ : state) benchmark::DoNotOptimize(*simulate_step_time(step.graph()));
  state.counters["tasks"] = step.graph().num_tasks();
  state.counters["tasks/s"] = benchmark::Counter(
      static_cast<double>(step.graph().num_tasks()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_FullSimulationTimeline(benchmark::State& state) {
  SyntheticStep step(static_cast<int>(state.range(0)), kSeed);
  for (auto _ : state) benchmark::DoNotOptimize(simulate(step.graph())->step_time);
  state.counters["tasks/s"] = benchmark::Counter(
      static_cast<double>(step.graph().num_tasks()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

/// Building a graph with the builder API: N tasks on 16 devices, two dependencies and one buffer
/// each.
void BM_BuildTaskGraph(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    TaskGraph g;
    for (int d = 0; d < kDevices; ++d) g.add_resource({"gpu" + std::to_string(d)});
    GroupId group = g.add_group("all");
    for (int i = 0; i < n; ++i) {
      const auto r = static_cast<ResourceId>(i % kDevices);
      Task t;
      t.name = "t" + std::to_string(i);
      t.resource = r;
      t.duration = 1e-4;
      t.group = group;
      TaskId id = g.add_task(std::move(t));
      if (i >= 1) g.add_edge(id - 1, id);
      if (i >= 17) g.add_edge(id - 17, id);
      g.add_buffer({"b" + std::to_string(i), r, 1024, id, {}, group});
    }
    benchmark::DoNotOptimize(g.num_tasks());
  }
  state.counters["tasks/s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

/// Proposals are drawn in advance: every one is rejected, so the state they apply to is fixed.
std::vector<SyntheticStep::Proposal> proposals(SyntheticStep& step, int n) {
  std::vector<SyntheticStep::Proposal> out;
  for (int i = 0; i < n; ++i) out.push_back(step.propose());
  return out;
}

/// A search step without delta simulation: change the graph, simulate it fully, undo.
void BM_ProposeRejectFull(benchmark::State& state) {
  SyntheticStep step(static_cast<int>(state.range(0)), kSeed);
  TaskGraph graph = step.graph();
  auto props = proposals(step, 64);
  size_t k = 0;
  for (auto _ : state) {
    auto applied = graph.apply(props[k++ % props.size()].change);
    benchmark::DoNotOptimize(*simulate_step_time(graph));
    graph.undo(*applied);
  }
  state.counters["tasks"] = graph.num_tasks();
}

/// A search step as FlexFlow's full simulation does it: lower the whole plan into a new task
/// graph, simulate it.
void BM_ProposeRejectRebuild(benchmark::State& state) {
  SyntheticStep step(static_cast<int>(state.range(0)), kSeed);
  auto props = proposals(step, 64);
  size_t k = 0;
  for (auto _ : state) {
    TaskGraph graph = step.rebuild(props[k++ % props.size()]);
    benchmark::DoNotOptimize(*simulate_step_time(graph));
  }
  state.counters["tasks"] = step.graph().num_tasks();
}

/// The same with delta simulation: apply, read the step time, revert.
void BM_ProposeRejectDelta(benchmark::State& state) {
  SyntheticStep step(static_cast<int>(state.range(0)), kSeed);
  auto sim = Simulation::create(step.graph());
  auto props = proposals(step, 64);
  size_t k = 0;
  double resimulated = 0, kept = 0, moved = 0;
  for (auto _ : state) {
    auto ids = sim->apply(props[k++ % props.size()].change);
    benchmark::DoNotOptimize(sim->step_time());
    resimulated += sim->last_delta().resimulated;
    moved += sim->last_delta().moved;
    kept += sim->last_delta().kept_until / sim->step_time();
    sim->revert();
  }
  state.counters["tasks"] = sim->graph().num_tasks();
  state.counters["resimulated"] = resimulated / static_cast<double>(state.iterations());
  state.counters["kept_frac"] = kept / static_cast<double>(state.iterations());
  state.counters["moved"] = moved / static_cast<double>(state.iterations());
}

/// A search that accepts half of its proposals (the graph drifts; proposals are drawn inside).
void BM_ProposeAcceptHalfDelta(benchmark::State& state) {
  SyntheticStep step(static_cast<int>(state.range(0)), kSeed);
  auto sim = Simulation::create(step.graph());
  std::mt19937 coin(7);
  for (auto _ : state) {
    SyntheticStep::Proposal p = step.propose();
    auto ids = sim->apply(p.change);
    benchmark::DoNotOptimize(sim->step_time());
    if (coin() % 2) {
      sim->accept();
      step.record(*ids, p);
    } else {
      sim->revert();
    }
  }
  state.counters["tasks"] = sim->graph().num_tasks();
}

// The argument is the number of operators (half forward, half backward); 1600 operators lower to
// about 48k tasks on the 16 GPUs and their links.
BENCHMARK(BM_BuildTaskGraph)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FullSimulationStepTime)->Arg(250)->Arg(1000)->Arg(1600)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FullSimulationTimeline)->Arg(1600)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProposeRejectFull)->Arg(250)->Arg(1000)->Arg(1600)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ProposeRejectRebuild)->Arg(250)->Arg(1000)->Arg(1600)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ProposeRejectDelta)->Arg(250)->Arg(1000)->Arg(1600)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ProposeAcceptHalfDelta)->Arg(1600)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace planner::analysis

BENCHMARK_MAIN();
