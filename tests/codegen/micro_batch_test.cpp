// Micro-batches with gradient accumulation (codegen/micro_batch.h): each pass runs every
// forward and backward kernel and the optimizer step runs once; the step of M passes simulates
// as the step of three extended (what the searches' judge uses, cli/plan_model.cpp); and M
// passes over micro-batches of b update the parameters exactly as one pass over M*b does, run
// on the cpu backend under data-parallel, model-parallel and searched plans.
#include <map>
#include <memory>

#include "analysis/lowering.h"
#include "codegen/micro_batch.h"
#include "codegen/partition.h"
#include "codegen/pipeline_schedule.h"
#include "codegen/program_simulation.h"
#include "codegen/verify.h"
#include "importers/onnx_import.h"
#include "importers/topology.h"
#include "search/pipeline.h"
#include "search/search.h"
#include "tests/codegen/prepared_model.h"
#include "tests/test_util.h"

namespace planner::codegen {
namespace {

using analysis::OpConfig;
using testing_model::Model;

std::unique_ptr<Model> net(int64_t batch,
                           analysis::Optimizer opt = analysis::Optimizer::kMomentum) {
  return testing_model::batch_first_net(batch, opt);
}

// `kind`'s plan of `m` on n ranks (on `stages` pipeline stages), compiled, scheduled, and
// unrolled into `passes` passes.
Programs compiled(const Model& m, const std::string& kind, int n, int passes, int64_t micro,
                  int stages = 1, Schedule schedule = Schedule::k1F1B) {
  const importers::Topology topo = importers::h100_cluster(n);
  const analysis::Lowering lowering(m.graph, m.strategies, topo);
  std::vector<OpConfig> configs;
  if (kind == "whole") {
    configs.assign(static_cast<size_t>(m.graph.num_ops()), OpConfig::single(0));
  } else {
    const std::string name = kind == "mp"   ? "model-parallel"
                             : kind == "dp" ? "data-parallel"
                                            : kind;
    configs = testing_model::searched_configs(m, lowering, name, {100, false, stages});
    if (stages > 1) REQUIRE(search::on_stage_blocks(configs, n, stages));
  }
  auto p = partition(lowering, configs, n, true);
  REQUIRE_MESSAGE(p.has_value(), p.error().message());
  REQUIRE(order_by_schedule(*p, m.graph, topo, lowering.compute_model()).has_value());
  MicroBatchOptions mo{passes, micro};
  if (stages > 1) {
    mo.schedule = schedule;
    mo.stages = stages;
    mo.rank_stage = search::rank_stages(n, stages);
  }
  auto u = unroll_micro_batches(*p, m.training, mo);
  REQUIRE_MESSAGE(u.has_value(), u.error().message());
  return std::move(*u);
}

struct Counts {
  int forward_backward = 0, update = 0, collectives = 0, adds = 0;
};

Counts count(const Model& m, const Programs& p) {
  Counts c;
  for (const RankProgram& r : p.ranks)
    for (const Step& s : r.steps) {
      if (s.kind != StepKind::kKernel) {
        ++c.collectives;
      } else if (s.op == ir::kNoOp) {
        c.adds += s.op_type == "Add";
      } else if (m.training.op_phase[static_cast<size_t>(s.op)] == analysis::Phase::kUpdate) {
        ++c.update;
      } else {
        ++c.forward_backward;
      }
    }
  return c;
}

}  // namespace

TEST_CASE("micro-batches: each pass runs the forward and backward pass, the update runs once") {
  auto m = net(4);
  for (const char* kind : {"dp", "mp"}) {
    INFO(kind);
    const Programs one = compiled(*m, kind, 4, 1, 4);
    const Programs four = compiled(*m, kind, 4, 4, 4);
    auto split = split_micro_batch_steps(one, m->training);
    REQUIRE(split.has_value());
    const Counts a = count(*m, one), b = count(*m, four);
    CHECK(b.forward_backward == 4 * a.forward_backward);
    CHECK(b.update == a.update);
    CHECK(a.adds == 0);
    CHECK(b.adds == 3 * static_cast<int>(split->accumulated.size()));
    if (std::string(kind) == "dp") {
      // Data parallelism: the gradient all-reduces run once, on the accumulated sums.
      CHECK(b.collectives == a.collectives);
      CHECK(split->accumulated.size() >= 5 * 4);  // every parameter's gradient, every rank
      for (int g : split->accumulated) CHECK(one.buffers[static_cast<size_t>(g)].partial);
    }
    // The optimizer step's outputs are the same buffers; parameters still carry over.
    CHECK(four.carries == one.carries);
    CHECK(four.outputs == one.outputs);
  }
}

TEST_CASE("micro-batches: the step of M passes simulates as three passes extended") {
  auto m = net(8);
  const importers::Topology topo = importers::h100_cluster(4);
  const analysis::Lowering lowering(m->graph, m->strategies, topo);
  for (const char* kind : {"dp", "mp", "dp"}) {
    INFO(kind);
    ProgramCost cost[3];
    const int passes[3] = {2, 3, 6};
    int64_t extended_peak = 0;
    for (int i = 0; i < 3; ++i) {
      const Programs p = compiled(*m, kind, 4, passes[i], 8);
      auto c = simulate_programs(p, m->graph, topo, lowering.compute_model());
      REQUIRE(c.has_value());
      cost[i] = *c;
      if (i == 1)
        extended_peak = extended_peak_bytes(p, cost[i].rank_peak_memory_bytes, m->graph, 3, 6);
    }
    const double extended = cost[1].step_time_s + 3 * (cost[1].step_time_s - cost[0].step_time_s);
    CHECK(cost[2].step_time_s == doctest::Approx(extended).epsilon(1e-6));
    CHECK(cost[2].peak_memory_bytes == extended_peak);
    CHECK(cost[2].step_time_s > cost[1].step_time_s);
  }
}

TEST_CASE("micro-batches: M passes of b update the parameters as one pass of M*b does") {
  auto big = net(16);
  auto small = net(4);
  Programs reference = compiled(*big, "whole", 1, 1, 16);
  std::vector<Programs> plans = {compiled(*small, "dp", 4, 4, 4), compiled(*small, "mp", 2, 4, 4),
                                 compiled(*small, "dp", 2, 2, 4),  // micro-batches of 4 of 8
                                 compiled(*small, "mcmc", 4, 4, 4)};
  // Batch 8 in two passes of 4 has its own reference.
  Programs reference8 = compiled(*net(8), "whole", 1, 1, 8);
  // Only the updated parameters and state: the model output is the last pass's rows.
  auto updates_only = [](Programs& p) {
    REQUIRE(testing_model::keep_updated_outputs(p) >= 8);  // five parameters, three momenta
  };
  updates_only(reference);
  updates_only(reference8);
  for (Programs& p : plans) updates_only(p);
  testing_model::check_all_agree(reference, {plans[0], plans[1], plans[3]}, 8, 1e-4);
  testing_model::check_all_agree(reference8, {plans[2]}, 8, 1e-4);
}

}  // namespace planner::codegen

namespace planner::codegen {

TEST_CASE("pipeline: the schedules' orders of forward and backward parts") {
  using P = std::vector<std::pair<int, bool>>;
  // GPipe: every forward part, then every backward part, on every stage.
  CHECK(chunk_order(Schedule::kGPipe, 0, 2, 3) ==
        P{{0, false}, {1, false}, {2, false}, {0, true}, {1, true}, {2, true}});
  // 1F1B: stage 0 of 3 runs two passes ahead; the last stage alternates from the start.
  CHECK(chunk_order(Schedule::k1F1B, 0, 3, 4) == P{{0, false},
                                                   {1, false},
                                                   {2, false},
                                                   {0, true},
                                                   {3, false},
                                                   {1, true},
                                                   {2, true},
                                                   {3, true}});
  CHECK(chunk_order(Schedule::k1F1B, 2, 3, 3) ==
        P{{0, false}, {0, true}, {1, false}, {1, true}, {2, false}, {2, true}});
  // Fewer passes than stages: the warm-up is every pass.
  CHECK(chunk_order(Schedule::k1F1B, 0, 4, 2) == P{{0, false}, {1, false}, {0, true}, {1, true}});
  CHECK(chunk_order(Schedule::kSequential, 1, 4, 2) ==
        P{{0, false}, {0, true}, {1, false}, {1, true}});
  CHECK(schedule_from_name("gpipe") == Schedule::kGPipe);
  CHECK(!schedule_from_name("zb-h1").has_value());
}

TEST_CASE("pipeline: 1F1B holds fewer passes' activations than GPipe, in the same time") {
  auto m = net(16);
  const importers::Topology topo = importers::h100_cluster(4);
  const analysis::Lowering lowering(m->graph, m->strategies, topo);
  auto cost = [&](Schedule s, int passes) {
    auto c = simulate_programs(compiled(*m, "dp", 4, passes, 16, 4, s), m->graph, topo,
                               lowering.compute_model());
    REQUIRE(c.has_value());
    return *c;
  };
  const ProgramCost gpipe = cost(Schedule::kGPipe, 8), one = cost(Schedule::k1F1B, 8);
  CHECK(one.peak_memory_bytes < gpipe.peak_memory_bytes);
  CHECK(one.step_time_s == doctest::Approx(gpipe.step_time_s).epsilon(0.1));
  // GPipe's memory grows with the passes' activations; 1F1B's only by the inputs the compiled
  // step holds for every pass (a 16x16 f32 box per pass on the first stage).
  const int64_t inputs = 4 * 16 * 16 * 4;
  CHECK(cost(Schedule::kGPipe, 12).peak_memory_bytes - gpipe.peak_memory_bytes > 2 * inputs);
  CHECK(cost(Schedule::k1F1B, 12).peak_memory_bytes - one.peak_memory_bytes <= inputs);
}

// The planner's step variants skip a pipelined plan whose step of fewer passes is already over
// the memory limit (cli/plan_model.h, peak_memory): that holds only if a step of more passes
// never peaks lower.
TEST_CASE("pipeline: a step of more passes never peaks lower than one of fewer") {
  auto m = net(16);
  const importers::Topology topo = importers::h100_cluster(4);
  const analysis::Lowering lowering(m->graph, m->strategies, topo);
  for (Schedule s : {Schedule::k1F1B, Schedule::kGPipe})
    for (int stages : {2, 4}) {
      INFO(static_cast<int>(s), " ", stages);
      int64_t before = 0;
      for (int passes = 1; passes <= 8; ++passes) {
        auto c = simulate_programs(compiled(*m, "dp", 4, passes, 16, stages, s), m->graph, topo,
                                   lowering.compute_model());
        REQUIRE(c.has_value());
        CHECK(c->peak_memory_bytes >= before);
        before = c->peak_memory_bytes;
      }
    }
}

TEST_CASE("pipeline: 2 and 4 stages, GPipe and 1F1B, update the parameters as one pass does") {
  auto big = net(16);
  auto small = net(4);
  Programs reference = compiled(*big, "whole", 1, 1, 16);
  std::vector<Programs> plans = {compiled(*small, "dp", 4, 4, 4, 2, Schedule::kGPipe),
                                 compiled(*small, "dp", 4, 4, 4, 2, Schedule::k1F1B),
                                 compiled(*small, "mp", 4, 4, 4, 4, Schedule::kGPipe),
                                 compiled(*small, "dp", 8, 4, 4, 4, Schedule::k1F1B),
                                 compiled(*small, "mcmc", 8, 4, 4, 2, Schedule::k1F1B)};
  testing_model::keep_updated_outputs(reference);
  for (Programs& p : plans) {
    testing_model::keep_updated_outputs(p);
    int sends = 0;
    for (const RankProgram& r : p.ranks)
      for (const Step& s : r.steps) sends += s.kind == StepKind::kSend;
    CHECK(sends > 0);  // activations and their gradients cross the stages
  }
  testing_model::check_all_agree(reference, plans, 8);
}

}  // namespace planner::codegen
