// Mixed precision and TF32 end to end: the example models prepared at fp16, bf16 and tf32,
// partitioned (data-parallel and the dp search, 2 and 4 ranks, training and inference), built,
// run and compared with the unpartitioned step at the same precision; a wrong program fails
// at fp16 and bf16; rank models declare f16 activations and f32 parameters and pass the checker.
#include <filesystem>
#include <fstream>
#include <memory>

#include <onnx/onnx_pb.h>

#include "analysis/lowering.h"
#include "analysis/op_strategies.h"
#include "analysis/precision.h"
#include "analysis/training_graph.h"
#include "codegen/compile.h"
#include "codegen/onnx_export.h"
#include "codegen/partition.h"
#include "codegen/verify.h"
#include "importers/onnx_import.h"
#include "importers/topology.h"
#include "search/search.h"
#include "tdl/library.h"
#include "tests/codegen/prepared_model.h"
#include "tests/test_util.h"

namespace planner::codegen {
namespace {

using analysis::OpConfig;

using testing_model::Model;

// The update's learning rate. The verify step's loss is 0.5·sum(y²) over the batch, and the
// default rate (0.01) lets the first update grow the MLP's weights 20-fold, so that the second
// step's activations pass f16's largest value (65504): real fp16 training keeps steps small (a
// mean loss, loss scaling). A rate that keeps both steps in range checks what matters here.
constexpr double kLearningRate = 1e-5;

std::unique_ptr<Model> example(const std::string& name, bool train, ir::Precision precision) {
  analysis::TrainingOptions options;
  options.learning_rate = kLearningRate;
  return testing_model::example(name, train, precision, options);
}

Programs compile(const Model& m, const std::vector<OpConfig>& configs, int n) {
  const importers::Topology topo = importers::h100_cluster(std::max(n, 1));
  const analysis::Lowering lowering(m.graph, m.strategies, topo);
  auto p = partition(lowering, configs, n, m.train);
  REQUIRE_MESSAGE(p.has_value(), p.error().message());
  p->precision = m.precision;
  return std::move(*p);
}

Programs reference(const Model& m) {
  return compile(
      m, std::vector<OpConfig>(static_cast<size_t>(m.graph.num_ops()), OpConfig::single(0)), 1);
}

// "dp" (the data-parallel baseline) or "search:NAME" on n H100s.
std::vector<OpConfig> plan(const Model& m, const std::string& kind, int n) {
  importers::Topology topo = importers::h100_cluster(n);
  analysis::LoweringOptions lo;
  lo.compute.allow_tf32 = ir::uses_tf32(m.precision);
  analysis::Lowering lowering(m.graph, m.strategies, topo, lo);
  if (kind == "dp") {
    auto c = analysis::baseline_configs(lowering, analysis::Baseline::kDataParallel, n);
    REQUIRE_MESSAGE(c.has_value(), c.error().message());
    return *c;
  }
  const analysis::TrainingGraph* training = m.train ? &m.training : nullptr;
  auto space = search::GroupSpace::create(lowering, training);
  REQUIRE_MESSAGE(space.has_value(), space.error().message());
  auto info = search::find_search(kind.substr(7));
  REQUIRE(info.has_value());
  search::SearchOptions o;
  o.budget_s = 0;
  o.max_proposals = 100;
  o.memory_limit = search::default_memory_limit(topo);
  auto r = (*info)->run({lowering, *space, training}, o);
  REQUIRE_MESSAGE(r.has_value(), r.error().message());
  return r->configs;
}

// Verifies the plans of one model, mode and precision against its reference, in one build.
void verify_at(const std::string& name, bool train, ir::Precision precision,
               const std::vector<std::pair<std::string, int>>& plans) {
  auto m = example(name, train, precision);
  std::vector<Programs> programs;
  for (const auto& [kind, n] : plans) programs.push_back(compile(*m, plan(*m, kind, n), n));
  const Programs ref = reference(*m);
  VerifyOptions vo;
  // PRECISION_TEST_KEEP=DIR keeps the compiled folders and dumps for a closer look.
  if (const char* k = std::getenv("PRECISION_TEST_KEEP")) vo.work_dir = k;
  auto results = verify_programs(ref, programs, vo);
  REQUIRE_MESSAGE(results.has_value(), results.error().message());
  for (size_t i = 0; i < results->size(); ++i) {
    const VerifyResult& r = (*results)[i];
    const Comparison& c = r.comparison;
    INFO(name, train ? " train " : " infer ", ir::precision_name(precision), " ", plans[i].first,
         " on ", plans[i].second, " ranks: max abs ", c.max_abs, ", max rel ", c.max_rel, ", ",
         c.max_ratio, " of the tolerance in '", c.worst, "' ", c.problem);
    MESSAGE(name, train ? " train " : " infer ", ir::precision_name(precision), " ", plans[i].first,
            " x", plans[i].second, ": rounding depth ", rounding_depth(ref, 2), ", atol ",
            r.tolerance.atol, ", max rel ", c.max_rel, ", ", c.max_ratio, " of the tolerance");
    CHECK(c.ok);
    CHECK(c.tensors > 0);
  }
}

// `p` with every all-reduce turned into a copy: each rank steps with its own part of the
// batch's gradient (a wrong program verify must reject).
Programs without_all_reduces(Programs p) {
  int removed = 0;
  for (RankProgram& r : p.ranks)
    for (Step& s : r.steps)
      if (s.kind == StepKind::kAllReduce) {
        s.kind = StepKind::kKernel;
        s.op_type = "Identity";
        s.group.clear();
        ++removed;
      }
  REQUIRE(removed > 0);
  return p;
}

void verify_model(const std::string& name) {
  for (ir::Precision p : {ir::Precision::kFp16, ir::Precision::kBf16}) {
    verify_at(name, true, p, {{"dp", 2}, {"search:dp", 4}});
    verify_at(name, false, p, {{"dp", 4}, {"search:dp", 2}});
  }
  verify_at(name, true, ir::Precision::kTf32, {{"dp", 4}, {"search:dp", 2}});
}

TEST_CASE("precision mlp: fp16, bf16 and tf32 partitioned steps match the unpartitioned step") {
  verify_model("mlp");
}

TEST_CASE("precision transformer_block: fp16, bf16 and tf32 partitioned steps match") {
  verify_model("transformer_block");
}

TEST_CASE("precision small_cnn: fp16, bf16 and tf32 partitioned steps match") {
  verify_model("small_cnn");
}

TEST_CASE("precision lstm: fp16, bf16 and tf32 partitioned steps match") {
  verify_model("lstm");
}

TEST_CASE("precision checks: a program without its all-reduce fails verify at fp16 and bf16") {
  for (ir::Precision p : {ir::Precision::kFp16, ir::Precision::kBf16}) {
    auto m = example("mlp", true, p);
    Programs good = compile(*m, plan(*m, "dp", 4), 4);
    // The weight gradients' all-reduces become copies: each rank steps with its own quarter of
    // the batch.
    Programs bad = without_all_reduces(good);
    auto results = verify_programs(reference(*m), {good, bad}, {});
    REQUIRE_MESSAGE(results.has_value(), results.error().message());
    INFO(ir::precision_name(p), ": good ", (*results)[0].comparison.max_ratio, ", bad ",
         (*results)[1].comparison.max_ratio, " of the tolerance");
    CHECK((*results)[0].comparison.ok);
    CHECK_FALSE((*results)[1].comparison.ok);
    // Not a near miss: the wrong program is far outside what rounding explains, and far
    // from the right one. Each rank's quarter-batch gradient differs from the whole batch's by
    // about its own size; at bf16 the tolerance (8 u sqrt(L) = 0.18 of the scale at L = 32) is
    // within a factor 3 of that, so the wrong program lands 2-3 times outside it there, while
    // the right one uses 0.1 to 0.25 of it depending on the BLAS kernel (OPENBLAS_CORETYPE):
    // the margin asserted is tenfold at fp16 and fourfold at bf16.
    const double margin = p == ir::Precision::kFp16 ? 10 : 4;
    CHECK((*results)[1].comparison.max_ratio > 2);
    CHECK((*results)[1].comparison.max_ratio > margin * (*results)[0].comparison.max_ratio);
  }
}

TEST_CASE("precision checks: verify's ReLU adjudication does not excuse a wrong program at fp32") {
  // The same wrong program at fp32, on the small CNN (ReLUs, max pooling): the comparison fails,
  // verify compares the runs' ReLU outputs, and the program is still rejected: either the ReLU
  // outputs differ beyond the tolerance, or, on them, the wrong gradients still do.
  auto m = example("small_cnn", true, ir::Precision::kFp32);
  Programs good = compile(*m, plan(*m, "dp", 2), 2);
  Programs bad = without_all_reduces(good);
  auto results = verify_programs(reference(*m), {good, bad}, {});
  REQUIRE_MESSAGE(results.has_value(), results.error().message());
  CHECK((*results)[0].comparison.ok);
  CHECK_FALSE((*results)[0].relu.has_value());  // nothing to settle when the runs agree
  CHECK_FALSE((*results)[1].comparison.ok);
  REQUIRE((*results)[1].relu.has_value());  // the ReLU outputs were compared
  CHECK((*results)[1].comparison.max_ratio > 2);
}

TEST_CASE("precision checks: rank models declare f16 activations and f32 parameters") {
  auto m = example("mlp", true, ir::Precision::kFp16);
  Programs p = compile(*m, plan(*m, "dp", 2), 2);
  auto bytes = rank_onnx(p, 0, 17, "mlp");
  REQUIRE_MESSAGE(bytes.has_value(), bytes.error().message());  // passed onnx::checker
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(*bytes));
  const onnx::GraphProto& g = model.graph();
  std::map<std::string, int> type_of;
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const onnx::ValueInfoProto& v : *list)
      type_of[v.name()] = v.type().tensor_type().elem_type();
  int params = 0, halves = 0;
  for (const Buffer& b : p.buffers) {
    if (b.rank != 0 || b.tensor == ir::kNoTensor) continue;
    const ir::Tensor& t = m->graph.tensor(b.tensor);
    auto it = type_of.find(value_names(p)[static_cast<size_t>(b.id)]);
    if (it == type_of.end()) continue;
    if (t.role == ir::TensorRole::kParameter) {
      CHECK_MESSAGE(it->second == onnx::TensorProto::FLOAT, t.name);
      ++params;
    }
    if (it->second == onnx::TensorProto::FLOAT16) ++halves;
  }
  CHECK(params > 0);
  CHECK(halves > 0);
  // The forward Gemm/MatMul reads an f32 weight: an explicit Cast to f16 feeds it.
  int casts_to_half = 0;
  for (const onnx::NodeProto& n : g.node())
    if (n.op_type() == "Cast" && n.attribute(0).i() == onnx::TensorProto::FLOAT16) ++casts_to_half;
  CHECK(casts_to_half > 0);
  // The manifest records the precision.
  CHECK(manifest_json(p, "mlp").find("\"precision\": \"fp16\"") != std::string::npos);
}

}  // namespace
}  // namespace planner::codegen
