// The compiled step simulated (codegen/program_simulation.h): every collective, transfer and
// resharding step of a compiled program is in the simulation, and every simulated task comes
// from a step (counted both ways); the reordered programs keep their pairs; the lowering that
// the searches price follows the compiled step closely.
#include <map>
#include <memory>
#include <numeric>
#include <set>

#include "analysis/lowering.h"
#include "analysis/op_strategies.h"
#include "analysis/simulator.h"
#include "analysis/training_graph.h"
#include "codegen/partition.h"
#include "codegen/program_simulation.h"
#include "importers/onnx_import.h"
#include "importers/topology.h"
#include "search/plan_builder.h"
#include "search/search.h"
#include "tdl/library.h"
#include "tests/codegen/prepared_model.h"
#include "tests/test_util.h"

namespace planner::codegen {
namespace {

using analysis::OpConfig;

using testing_model::example;
using testing_model::Model;

// The configs of a search (or baseline) of the search table on n H100s.
std::vector<OpConfig> plan_of(const Model& m, const analysis::Lowering& lowering,
                              const std::string& name, int) {
  return testing_model::searched_configs(m, lowering, name, {200, false, 1});
}

bool is_collective(StepKind k) {
  return k == StepKind::kAllReduce || k == StepKind::kAllGather || k == StepKind::kAllToAll ||
         k == StepKind::kReduceScatter;
}

// Every step is simulated and every task comes from a step; per kind, as many tasks as steps.
void check_counts(const Programs& p, const ProgramTasks& t) {
  std::vector<int64_t> steps(7, 0);
  std::set<analysis::TaskId> from_steps;
  int64_t kernels = 0, transfers = 0, collective_members = 0;
  for (int r = 0; r < p.num_ranks; ++r) {
    const RankProgram& prog = p.ranks[static_cast<size_t>(r)];
    REQUIRE(t.step_task[static_cast<size_t>(r)].size() == prog.steps.size());
    for (size_t i = 0; i < prog.steps.size(); ++i) {
      const Step& s = prog.steps[i];
      const analysis::TaskId task = t.step_task[static_cast<size_t>(r)][i];
      CAPTURE(r);
      CAPTURE(i);
      CHECK(task != analysis::kNoTask);
      ++steps[static_cast<size_t>(s.kind)];
      from_steps.insert(task);
      const analysis::Task& k = t.graph.task(task);
      if (s.kind == StepKind::kKernel) {
        ++kernels;
        CHECK(k.kind == analysis::TaskKind::kCompute);
        CHECK(k.resource == t.compute[static_cast<size_t>(r)]);
      } else {
        CHECK(k.kind == analysis::TaskKind::kComm);
        if (is_collective(s.kind)) {
          ++collective_members;
          CHECK(k.resource == t.channel[static_cast<size_t>(r)]);
        }
        if (s.kind == StepKind::kSend) {
          ++transfers;
          CHECK(k.resource == t.channel[static_cast<size_t>(r)]);
        }
        if (s.kind == StepKind::kRecv) CHECK(k.resource == t.channel[static_cast<size_t>(s.peer)]);
      }
    }
  }
  for (size_t k = 0; k < steps.size(); ++k) CHECK(t.steps_simulated[k] == steps[k]);
  CHECK(steps[static_cast<size_t>(StepKind::kSend)] == steps[static_cast<size_t>(StepKind::kRecv)]);
  // The other way: every task is a step's, or a collective's join.
  int64_t joins = 0, tasks = 0;
  for (analysis::TaskId id = 0; id < t.graph.task_capacity(); ++id) {
    if (!t.graph.alive(id)) continue;
    ++tasks;
    if (from_steps.count(id)) continue;
    CAPTURE(t.graph.task(id).name);
    CHECK(t.graph.task(id).name.find("(join,") != std::string::npos);
    ++joins;
  }
  CHECK(tasks == kernels + transfers + collective_members + joins);
  MESSAGE(kernels, " kernels, ", transfers, " transfers, ", collective_members,
          " collective calls, ", joins, " collectives");
}

TEST_CASE("every step of a compiled program is simulated, and every task is a step's") {
  for (const std::string name : {"mlp", "transformer_block", "small_cnn", "lstm"})
    for (bool train : {true, false}) {
      auto m = example(name, train);
      const int n = 4;
      const importers::Topology topo = importers::h100_cluster(n);
      const analysis::Lowering lowering(m->graph, m->strategies, topo);
      for (const std::string s : {"data-parallel", "dp", "frontier", "mcmc"}) {
        CAPTURE(name);
        CAPTURE(train);
        CAPTURE(s);
        const std::vector<OpConfig> configs = plan_of(*m, lowering, s, n);
        auto p = partition(lowering, configs, n, m->train);
        REQUIRE_MESSAGE(p.has_value(), p.error().message());
        auto tasks = program_tasks(*p, m->graph, topo, lowering.compute_model());
        REQUIRE_MESSAGE(tasks.has_value(), tasks.error().message());
        check_counts(*p, *tasks);
        // Reordered by the schedule: the same steps, still paired, and the in-order step is
        // the dataflow schedule (what the lowering prices).
        auto dataflow = program_tasks(*p, m->graph, topo, lowering.compute_model(), false);
        REQUIRE(dataflow.has_value());
        auto free_run = analysis::simulate(dataflow->graph);
        REQUIRE(free_run.has_value());
        REQUIRE(order_by_schedule(*p, m->graph, topo, lowering.compute_model()).has_value());
        auto ordered = program_tasks(*p, m->graph, topo, lowering.compute_model());
        REQUIRE_MESSAGE(ordered.has_value(), ordered.error().message());
        check_counts(*p, *ordered);
        auto cost = simulate_programs(*p, m->graph, topo, lowering.compute_model());
        REQUIRE(cost.has_value());
        // The in-order step is the dataflow schedule, up to the order in which a rank's channel
        // takes collectives that become ready together: a member orders them by the earliest
        // start among all members (so every rank's order is one global order's projection),
        // which for collectives over overlapping groups can differ from the dataflow run's.
        CHECK(cost->step_time_s == doctest::Approx(free_run->step_time).epsilon(1e-3));
        // The lowering (the searches' model) against the compiled step, without the wait for
        // the slowest GPU, which only the compiled step's simulation adds.
        analysis::ComputeCostOptions level = lowering.compute_model().options();
        level.speed_spread = 0;
        auto level_cost = simulate_programs(*p, m->graph, topo, analysis::ComputeCostModel(level));
        REQUIRE(level_cost.has_value());
        CHECK(cost->step_time_s >= level_cost->step_time_s);
        auto lowered = search::evaluate_configs(lowering, configs);
        REQUIRE(lowered.has_value());
        CHECK(lowered->step_time_s == doctest::Approx(level_cost->step_time_s).epsilon(0.05));
      }
    }
}

TEST_CASE("kernels wait for the slowest of the GPUs that run them") {
  auto m = example("mlp", true);
  const importers::Topology topo = importers::h100_cluster(4);
  const analysis::Lowering lowering(m->graph, m->strategies, topo);
  analysis::ComputeCostOptions level = lowering.compute_model().options();
  level.speed_spread = 0;
  const analysis::ComputeCostModel flat(level);
  const analysis::ComputeCostOptions& o = lowering.compute_model().options();

  // Data parallelism: all four GPUs run kernels, each kernel x(1 + 0.2 * 4/5) / (1 + 0.2 / 2).
  auto p = partition(lowering, plan_of(*m, lowering, "data-parallel", 4), 4, m->train);
  REQUIRE(p.has_value());
  auto waiting = program_tasks(*p, m->graph, topo, lowering.compute_model());
  auto level_tasks = program_tasks(*p, m->graph, topo, flat);
  REQUIRE(waiting.has_value());
  REQUIRE(level_tasks.has_value());
  CHECK(waiting->synchronized_gpus == 4);
  CHECK(waiting->kernel_stretch == doctest::Approx(analysis::sync_slowdown(o, 4)));
  CHECK(waiting->kernel_stretch == doctest::Approx(1.16 / 1.1));
  int kernels = 0;
  for (analysis::TaskId t = 0; t < waiting->graph.task_capacity(); ++t) {
    if (!waiting->graph.alive(t)) continue;
    const analysis::Task& a = waiting->graph.task(t);
    const analysis::Task& b = level_tasks->graph.task(t);
    if (a.kind == analysis::TaskKind::kCompute) {
      ++kernels;
      CHECK(a.duration == doctest::Approx(b.duration * waiting->kernel_stretch));
    } else {
      CHECK(a.duration == b.duration);  // communication does not wait for clocks
    }
  }
  CHECK(kernels > 0);

  // A step on one of the four GPUs waits for nobody.
  const importers::Topology one = importers::h100_cluster(1);
  const analysis::Lowering single(m->graph, m->strategies, one);
  auto q = partition(single, plan_of(*m, single, "data-parallel", 1), 1, m->train);
  REQUIRE(q.has_value());
  auto alone = program_tasks(*q, m->graph, topo, lowering.compute_model());
  REQUIRE(alone.has_value());
  CHECK(alone->synchronized_gpus == 1);
  CHECK(alone->kernel_stretch == 1.0);
}

TEST_CASE("a program whose collective a member does not call is refused") {
  auto m = example("mlp", true);
  const importers::Topology topo = importers::h100_cluster(2);
  const analysis::Lowering lowering(m->graph, m->strategies, topo);
  auto p = partition(lowering, plan_of(*m, lowering, "data-parallel", 2), 2, true);
  REQUIRE(p.has_value());
  // Rank 1 loses its first all-reduce.
  auto& steps = p->ranks[1].steps;
  auto it = std::find_if(steps.begin(), steps.end(),
                         [](const Step& s) { return s.kind == StepKind::kAllReduce; });
  REQUIRE(it != steps.end());
  steps.erase(it);
  auto tasks = program_tasks(*p, m->graph, topo, lowering.compute_model());
  REQUIRE_FALSE(tasks.has_value());
  CHECK(tasks.error().message().find("do not pair up") != std::string::npos);
}

}  // namespace
}  // namespace planner::codegen
