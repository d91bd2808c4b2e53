// Virtual pipeline stages (Megatron-LM's interleaved 1F1B): the order of a rank's units, the
// model chunk of each operator and step, and a deep network cut into stages x chunks whose
// interleaved step updates the parameters as one pass over the whole batch does, with a
// smaller bubble than 1F1B's on the same stages.
#include <set>
#include <string>

#include "analysis/lowering.h"
#include "codegen/micro_batch.h"
#include "codegen/partition.h"
#include "codegen/pipeline_schedule.h"
#include "codegen/program_simulation.h"
#include "codegen/verify.h"
#include "importers/onnx_import.h"
#include "importers/topology.h"
#include "search/pipeline.h"
#include "tests/codegen/prepared_model.h"
#include "tests/test_util.h"

namespace planner::codegen {
namespace {

using analysis::OpConfig;
using testing_model::Model;

// A batch-first MLP of `layers` equal layers (MatMul, Add, Relu): no operator mixes a batch's
// rows, so the step of M micro-batches computes what one pass over the whole batch does.
std::unique_ptr<Model> deep_net(int layers, int64_t batch) {
  std::string params, body;
  std::string x = "x";
  for (int l = 0; l < layers; ++l) {
    params += (l ? ", " : "") + std::string("float[16,16] w") + std::to_string(l) +
              " = {}, float[16] b" + std::to_string(l) + " = {}";
    const std::string i = std::to_string(l);
    body += "  h" + i + " = MatMul(" + x + ", w" + i + ")\n";
    body += "  a" + i + " = Add(h" + i + ", b" + i + ")\n";
    const std::string y = l + 1 == layers ? "y" : "r" + i;
    body += "  " + y + " = Relu(a" + i + ")\n";
    x = y;
  }
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "net (float[batch,16] x) => (float[batch,16] y)\n<" +
      params + ">\n{\n" + body + "}\n";
  importers::ImportOptions o;
  o.batch = batch;
  auto g = importers::import_model_text(text, "deep.onnxtxt", o);
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  analysis::TrainingOptions t;
  t.optimizer = analysis::Optimizer::kAdam;
  return testing_model::prepare(std::move(*g), true, std::nullopt, t);
}

struct Staged {
  std::vector<OpConfig> configs;
  Programs programs;
};

// Data parallelism inside `stages` stages of `virtual_stages` chunks each, on n ranks, compiled
// and unrolled into `passes` passes in `schedule`.
Staged staged(const Model& m, int n, int stages, int virtual_stages, int passes, int64_t micro,
              Schedule schedule = Schedule::k1F1B) {
  const importers::Topology topo = importers::h100_cluster(n);
  const analysis::Lowering lowering(m.graph, m.strategies, topo);
  auto space = search::GroupSpace::create(lowering, &m.training);
  REQUIRE(space.has_value());
  auto info = search::find_search("data-parallel");
  REQUIRE(info.has_value());
  search::SearchOptions o;
  o.budget_s = 0;
  o.virtual_stages = virtual_stages;
  auto r = search::run_pipelined(**info, {lowering, *space, &m.training}, o, stages);
  REQUIRE_MESSAGE(r.has_value(), r.error().message());
  REQUIRE((stages == 1 || search::on_stage_blocks(r->configs, n, stages)));
  auto p = partition(lowering, r->configs, n, true);
  REQUIRE_MESSAGE(p.has_value(), p.error().message());
  REQUIRE(order_by_schedule(*p, m.graph, topo, lowering.compute_model()).has_value());
  MicroBatchOptions mo;
  mo.micro_batches = passes;
  mo.micro_batch = micro;
  mo.schedule = schedule;
  mo.stages = stages;
  mo.rank_stage = search::rank_stages(n, stages);
  mo.virtual_stages = virtual_stages;
  if (virtual_stages > 1) {
    auto chunks = search::op_chunks(m.graph, &m.training, r->configs, n, stages, virtual_stages);
    REQUIRE_MESSAGE(chunks.has_value(), chunks.error().message());
    mo.op_chunk = *chunks;
  }
  auto u = unroll_micro_batches(*p, m.training, mo);
  REQUIRE_MESSAGE(u.has_value(), u.error().message());
  return {r->configs, std::move(*u)};
}

}  // namespace

TEST_CASE("virtual stages: Megatron-LM's interleaved order of a rank's units") {
  using U = std::vector<PassUnit>;
  // 2 stages, 2 chunks, 4 passes on stage 0: forward units walk chunk 0 of passes 0-1, chunk 1
  // of passes 0-1, then passes 2-3; backward units the chunks in reverse. Warm-up (2 - 0 - 1)
  // * 2 + (2 - 1) * 2 = 4 forward units.
  CHECK(unit_order(Schedule::k1F1B, 0, 2, 4, 2) == U{{0, false, 0},
                                                     {1, false, 0},
                                                     {0, false, 1},
                                                     {1, false, 1},
                                                     {2, false, 0},
                                                     {0, true, 1},
                                                     {3, false, 0},
                                                     {1, true, 1},
                                                     {2, false, 1},
                                                     {0, true, 0},
                                                     {3, false, 1},
                                                     {1, true, 0},
                                                     {2, true, 1},
                                                     {3, true, 1},
                                                     {2, true, 0},
                                                     {3, true, 0}});
  // The last stage warms up (V - 1) * K = 2 units, then starts on chunk 1's backward parts.
  const U last = unit_order(Schedule::k1F1B, 1, 2, 4, 2);
  CHECK(last[2] == PassUnit{0, false, 1});
  CHECK(last[3] == PassUnit{0, true, 1});
  // As many passes as stages: every forward unit first.
  const U all = unit_order(Schedule::k1F1B, 1, 4, 4, 3);
  for (size_t i = 0; i < 12; ++i) CHECK(!all[i].backward);
  // Each unit exactly once, whatever the stage, schedule and counts.
  for (Schedule s : {Schedule::k1F1B, Schedule::kGPipe})
    for (int k : {2, 3, 4})
      for (int v : {2, 3})
        for (int passes : {k, 2 * k, 4 * k})
          for (int stage = 0; stage < k; ++stage) {
            const U u = unit_order(s, stage, k, passes, v);
            std::set<std::tuple<int, bool, int>> seen;
            for (const PassUnit& x : u) seen.insert({x.pass, x.backward, x.chunk});
            CHECK(u.size() == static_cast<size_t>(2 * passes * v));
            CHECK(seen.size() == u.size());
          }
  // One chunk: chunk_order's units.
  const U one = unit_order(Schedule::k1F1B, 0, 3, 4, 1);
  const auto pairs = chunk_order(Schedule::k1F1B, 0, 3, 4);
  REQUIRE(one.size() == pairs.size());
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(one[i].pass == pairs[i].first);
    CHECK(one[i].backward == pairs[i].second);
  }
  CHECK(schedule_phrase("1f1b", 2) == "interleaved 1f1b schedule, 2 model chunks per stage");
  CHECK(schedule_phrase("gpipe", 1) == "gpipe schedule");
}

TEST_CASE("virtual stages: each operator's chunk, from the stages its forward pass walks") {
  auto m = deep_net(8, 4);
  const Staged s = staged(*m, 2, 2, 2, 2, 4);
  auto chunks = search::op_chunks(m->graph, &m->training, s.configs, 2, 2, 2);
  REQUIRE(chunks.has_value());
  // The forward MatMuls: layers 0-1 chunk 0 of stage 0, 2-3 chunk 0 of stage 1, 4-5 chunk 1
  // of stage 0, 6-7 chunk 1 of stage 1 (equal layers: equal runs).
  std::vector<std::pair<int, int>> seen;  // (stage, chunk) of h0 ... h7's MatMul
  for (ir::OpId id : m->graph.topo_order()) {
    const ir::Op& op = m->graph.op(id);
    if (op.op_type != "MatMul" ||
        m->training.op_phase[static_cast<size_t>(id)] != analysis::Phase::kForward)
      continue;
    seen.push_back(
        {s.configs[static_cast<size_t>(id)].devices.front(), (*chunks)[static_cast<size_t>(id)]});
  }
  CHECK(seen == std::vector<std::pair<int, int>>{
                    {0, 0}, {0, 0}, {1, 0}, {1, 0}, {0, 1}, {0, 1}, {1, 1}, {1, 1}});
  // Every backward and update operator is in its forward operator's chunk.
  for (ir::OpId id = 0; id < m->graph.num_ops(); ++id) {
    const ir::OpId f = m->training.op_group[static_cast<size_t>(id)];
    if (f != ir::kNoOp && f != id)
      CHECK((*chunks)[static_cast<size_t>(id)] == (*chunks)[static_cast<size_t>(f)]);
  }
  // The same placement read as one chunk per stage walks the stages twice: refused.
  auto one = search::op_chunks(m->graph, &m->training, s.configs, 2, 2, 1);
  REQUIRE(!one.has_value());
  CHECK(one.error().message().find("walk its 2 stages 2 times") != std::string::npos);
}

TEST_CASE("virtual stages: the interleaved step updates as one pass does, with a smaller bubble") {
  auto big = deep_net(8, 16);
  auto small = deep_net(8, 4);
  Programs reference = staged(*big, 1, 1, 1, 1, 16).programs;
  std::vector<Programs> plans;
  plans.push_back(staged(*small, 2, 2, 2, 4, 4).programs);
  plans.push_back(staged(*small, 4, 4, 2, 4, 4).programs);
  plans.push_back(staged(*small, 2, 2, 4, 4, 4).programs);
  plans.push_back(staged(*small, 4, 2, 2, 4, 4, Schedule::kGPipe).programs);
  for (const Programs& p : plans) CHECK(p.virtual_stages > 1);
  testing_model::keep_updated_outputs(reference);
  for (Programs& p : plans) testing_model::keep_updated_outputs(p);
  testing_model::check_all_agree(reference, plans, 16);

  // Simulated on 4 stages: the interleaved step is faster than 1F1B's (the bubble is (K - 1) /
  // V chunks' time, not K - 1 stages'), with V times the messages between stages.
  auto m = deep_net(16, 4);
  const importers::Topology topo = importers::h100_cluster(4);
  const analysis::ComputeCostModel compute;
  auto simulate = [&](const Programs& p) {
    auto c = simulate_programs(p, m->graph, topo, compute, nullptr, nullptr);
    REQUIRE_MESSAGE(c.has_value(), c.error().message());
    return *c;
  };
  auto sends = [](const Programs& p) {
    int n = 0;
    for (const RankProgram& r : p.ranks)
      for (const Step& s : r.steps) n += s.kind == StepKind::kSend;
    return n;
  };
  const Programs flat = staged(*m, 4, 4, 1, 8, 4).programs;
  const Programs inter = staged(*m, 4, 4, 2, 8, 4).programs;
  const ProgramCost a = simulate(flat), b = simulate(inter);
  INFO("1f1b ", a.step_time_s, " s, interleaved ", b.step_time_s, " s");
  CHECK(b.step_time_s < a.step_time_s);
  CHECK(sends(inter) > sends(flat));
}

}  // namespace planner::codegen
