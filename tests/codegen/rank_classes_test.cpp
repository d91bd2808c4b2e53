// Alike ranks simulated once (codegen/rank_classes.h): wherever the reduction is taken, the
// step simulated with one representative per class has exactly the figures of the step
// simulated with every rank (step time, every rank's time and peak, bytes, kernels), for the
// examples under every search, on one node, two nodes and a mixed H100 + A100 cluster, and for
// pipelines of micro-batches; data parallelism reduces to one class per device type.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/lowering.h"
#include "codegen/micro_batch.h"
#include "codegen/partition.h"
#include "codegen/pipeline_schedule.h"
#include "codegen/program_simulation.h"
#include "codegen/rank_classes.h"
#include "importers/topology.h"
#include "search/pipeline.h"
#include "search/replicas.h"
#include "tests/codegen/prepared_model.h"
#include "tests/test_util.h"

namespace planner::codegen {
namespace {

using analysis::OpConfig;
using testing_model::example;
using testing_model::Model;

struct Compiled {
  ProgramCost cost;
  std::shared_ptr<const RankClasses> classes;
};

// `configs` compiled on `topo` (ordered by the schedule, unrolled into `passes` passes on
// `stages` stages), simulated with every rank or with one per class.
Compiled simulate(const Model& m, const analysis::Lowering& lowering,
                  const importers::Topology& topo, const std::vector<OpConfig>& configs,
                  bool alike_once, int passes = 1, int stages = 1,
                  Schedule schedule = Schedule::k1F1B) {
  const int n = topo.num_devices();
  // Priced as the planner prices (cli/plan_model.cpp): constants without their bytes.
  PartitionOptions po;
  po.values = !alike_once;
  auto p = partition(lowering, configs, n, m.train, po);
  REQUIRE_MESSAGE(p.has_value(), p.error().message());
  for (const Buffer& b : p->buffers)
    if (b.init == BufferInit::kConstant && b.tensor != ir::kNoTensor)
      CHECK(b.data.empty() == alike_once);
  Compiled out;
  if (alike_once) {
    auto classes = rank_classes(*p, topo);
    REQUIRE_MESSAGE(classes.has_value(), classes.error().message());
    out.classes = *classes;
    keep_representatives(*p, out.classes);
  }
  auto ordered = order_by_schedule(*p, m.graph, topo, lowering.compute_model());
  REQUIRE_MESSAGE(ordered.has_value(), ordered.error().message());
  REQUIRE(check_runs(*p).has_value());
  Programs programs = std::move(*p);
  if (m.train && passes > 1) {
    MicroBatchOptions mo{passes, 0};
    if (stages > 1) {
      mo.schedule = schedule;
      mo.stages = stages;
      mo.rank_stage = search::rank_stages(n, stages);
    }
    auto u = unroll_micro_batches(programs, m.training, mo);
    REQUIRE_MESSAGE(u.has_value(), u.error().message());
    programs = std::move(*u);
  }
  auto cost = simulate_programs(programs, m.graph, topo, lowering.compute_model());
  REQUIRE_MESSAGE(cost.has_value(), cost.error().message());
  out.cost = std::move(*cost);
  return out;
}

void check_same(const ProgramCost& all, const ProgramCost& once) {
  CHECK(once.step_time_s == all.step_time_s);
  CHECK(once.peak_memory_bytes == all.peak_memory_bytes);
  CHECK(once.comm_bytes == doctest::Approx(all.comm_bytes).epsilon(1e-12));
  CHECK(once.rank_time_s == all.rank_time_s);
  CHECK(once.rank_peak_memory_bytes == all.rank_peak_memory_bytes);
  CHECK(once.kernels == all.kernels);
  CHECK(once.kernels_whole == all.kernels_whole);
}

TEST_CASE("alike ranks simulated once give every rank's figures exactly") {
  const std::string mixed =
      (planner::testing::source_dir() / "examples/topologies/h100-a100-2x8.json").string();
  auto hetero = importers::load_topology(mixed);
  REQUIRE_MESSAGE(hetero.has_value(), hetero.error().message());
  const std::vector<std::pair<std::string, importers::Topology>> topologies = {
      {"1 node", importers::h100_cluster(8)},
      {"2 nodes", importers::h100_cluster(16)},
      {"h100 + a100", *hetero}};
  int reduced = 0, cases = 0;
  for (const auto& entry : topologies)
    for (const std::string name : {"mlp", "transformer_block", "small_cnn", "lstm"})
      for (bool train : {true, false}) {
        const std::string& where = entry.first;
        const importers::Topology& topo = entry.second;
        auto m = example(name, train);
        const analysis::Lowering lowering(m->graph, m->strategies, topo);
        for (const std::string s : {"data-parallel", "dp", "mcmc"}) {
          CAPTURE(where);
          CAPTURE(name);
          CAPTURE(train);
          CAPTURE(s);
          const std::vector<OpConfig> configs =
              testing_model::searched_configs(*m, lowering, s, {100, false, 1});
          const Compiled all = simulate(*m, lowering, topo, configs, false);
          const Compiled once = simulate(*m, lowering, topo, configs, true);
          ++cases;
          if (!once.classes) continue;
          ++reduced;
          CHECK(once.classes->num_classes() < topo.num_devices());
          check_same(all.cost, once.cost);
          if (s == "data-parallel" && train)  // every rank alike on its device type
            CHECK(once.classes->num_classes() == static_cast<int>(topo.device_types().size()));
        }
      }
  MESSAGE(reduced, " of ", cases, " plans simulated with one rank per class");
  CHECK(reduced >= cases / 3);
}

TEST_CASE("alike ranks simulated once: pipelines of micro-batches, GPipe and 1F1B") {
  auto m = testing_model::batch_first_net(16);
  const importers::Topology topo = importers::h100_cluster(8);
  const analysis::Lowering lowering(m->graph, m->strategies, topo);
  for (const std::string s : {"data-parallel", "model-parallel", "dp"})
    for (int stages : {2, 4})
      for (Schedule schedule : {Schedule::kGPipe, Schedule::k1F1B}) {
        CAPTURE(s);
        CAPTURE(stages);
        CAPTURE(schedule_name(schedule));
        const std::vector<OpConfig> configs =
            testing_model::searched_configs(*m, lowering, s, {100, false, stages});
        REQUIRE(search::on_stage_blocks(configs, 8, stages));
        const Compiled all = simulate(*m, lowering, topo, configs, false, 6, stages, schedule);
        const Compiled once = simulate(*m, lowering, topo, configs, true, 6, stages, schedule);
        if (s == "data-parallel") REQUIRE(once.classes);
        if (once.classes) check_same(all.cost, once.cost);
      }
}

// Per communication kind: its steps in `p`.
std::map<StepKind, int> comm_counts(const Programs& p) {
  std::map<StepKind, int> out;
  for (const RankProgram& r : p.ranks)
    for (const Step& s : r.steps)
      if (s.kind != StepKind::kKernel) ++out[s.kind];
  return out;
}

TEST_CASE("two replicas compile as two blocks: their gathers stay collectives") {
  auto half = testing_model::batch_first_net(8), pair = testing_model::batch_first_net(16);
  const importers::Topology block_topo = importers::h100_cluster(4);
  const importers::Topology pair_topo = importers::h100_cluster(8);
  const analysis::Lowering one(half->graph, half->strategies, block_topo);
  const analysis::Lowering two(pair->graph, pair->strategies, pair_topo);
  auto vars = search::batch_variables(one, two);
  REQUIRE_MESSAGE(vars.has_value(), vars.error().message());
  const search::ReplicaLayout layout{4, 2, 1};
  PartitionOptions options;
  for (int r = 0; r < 8; ++r) {
    const auto [copy, inner] = layout.locate(r);
    options.replicas.replica.push_back(copy);
    options.replicas.inner.push_back(inner);
  }
  int gathers = 0;
  for (const std::string s : {"model-parallel", "dp", "mcmc"}) {
    CAPTURE(s);
    const std::vector<OpConfig> block = testing_model::searched_configs(*half, one, s, {100});
    std::vector<char> whole(block.size(), 0);
    for (size_t id = 0; id < block.size(); ++id) {
      if ((*vars)[id].empty() || block[id].num_shards() < 2) continue;
      auto shards = one.op_shards(static_cast<ir::OpId>(id), block[id]);
      whole[id] = shards && !(*shards)->native;
    }
    auto alone = partition(one, block, 4, true);
    REQUIRE_MESSAGE(alone.has_value(), alone.error().message());
    auto both =
        partition(two, search::replicate_configs(block, *vars, layout, whole), 8, true, options);
    REQUIRE_MESSAGE(both.has_value(), both.error().message());
    std::map<StepKind, int> a = comm_counts(*alone), b = comm_counts(*both);
    // A reduce-scatter of partial sums in the block may become, in two replicas, one
    // all-reduce with the replicas' sum (the gradient of a weight split in the block): only
    // the kinds that move values, not sums, are counted.
    for (StepKind k :
         {StepKind::kAllGather, StepKind::kAllToAll, StepKind::kSend, StepKind::kRecv}) {
      CAPTURE(std::string(step_kind_name(k)));
      CHECK(b[k] == 2 * a[k]);
    }
    gathers += a[StepKind::kAllGather] + a[StepKind::kAllToAll];
  }
  CHECK(gathers > 0);
}

}  // namespace
}  // namespace planner::codegen
