// End-to-end tests of codegen: plans of the example models compiled, built, run partitioned
// and whole, and compared (data-parallel, model-parallel, hand-mixed plans and the plans of
// the dp, frontier and mcmc searches on 2, 4 and 8 ranks, training and inference; training-mode
// batch norm, dropout and batch-first attention); a plan missing an all-reduce is caught; rank
// models pass the ONNX checker; a model with hostile names compiles and runs.
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <set>

#include "analysis/lowering.h"
#include "analysis/op_strategies.h"
#include "analysis/training_graph.h"
#include "codegen/compile.h"
#include "codegen/launcher.h"
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

using testing_model::example;
using testing_model::Model;
using testing_model::prepare;

std::vector<OpConfig> baseline(const Model& m, analysis::Baseline b, int n) {
  importers::Topology topo = importers::h100_cluster(n);
  analysis::Lowering lowering(m.graph, m.strategies, topo);
  auto c = analysis::baseline_configs(lowering, b, n);
  REQUIRE_MESSAGE(c.has_value(), c.error().message());
  return *c;
}

// A hand-mixed plan: operators in turn data-parallel, model-parallel, split along two
// variables at once (2 x n/2), and whole on one device or replicated on a subset.
std::vector<OpConfig> mixed(const Model& m, int n) {
  std::vector<OpConfig> dp = baseline(m, analysis::Baseline::kDataParallel, n);
  std::vector<OpConfig> mp = baseline(m, analysis::Baseline::kModelParallel, n);
  importers::Topology topo = importers::h100_cluster(n);
  analysis::Lowering lowering(m.graph, m.strategies, topo);
  std::vector<int> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  std::vector<OpConfig> out(static_cast<size_t>(m.graph.num_ops()));
  int i = 0;
  for (ir::OpId id : m.graph.topo_order()) {
    OpConfig c = dp[static_cast<size_t>(id)];
    switch (i++ % 4) {
      case 1:
        c = mp[static_cast<size_t>(id)];
        break;
      case 2: {
        std::vector<std::pair<std::string, int64_t>> vars(lowering.splittable(id).begin(),
                                                          lowering.splittable(id).end());
        if (vars.size() >= 2 && n >= 4 && vars[0].second >= 2 && vars[1].second >= n / 2) {
          c.splits = {{vars[0].first, 2}, {vars[1].first, n / 2}};
          c.replicas = 1;
          c.devices = all;
          std::reverse(c.devices.begin(), c.devices.end());
        }
        break;
      }
      case 3:
        c = (i / 4) % 2 ? OpConfig::single(i % n) : OpConfig::replicated({0, n - 1});
        if (n == 1) c = OpConfig::single(0);
        break;
      default:
        break;
    }
    REQUIRE_MESSAGE(lowering.check_config(id, c).has_value(), m.graph.op(id).name);
    out[static_cast<size_t>(id)] = c;
  }
  return out;
}

// The plan a search of the search table finds on n H100s (mcmc with a fixed proposal count).
std::vector<OpConfig> searched(const Model& m, const std::string& name, int n) {
  importers::Topology topo = importers::h100_cluster(n);
  analysis::Lowering lowering(m.graph, m.strategies, topo);
  return testing_model::searched_configs(m, lowering, name);
}

Programs compile(const Model& m, const std::vector<OpConfig>& configs, int n,
                 const PartitionOptions& options = {}) {
  const importers::Topology topo = importers::h100_cluster(std::max(n, 1));
  const analysis::Lowering lowering(m.graph, m.strategies, topo);
  auto p = partition(lowering, configs, n, m.train, options);
  REQUIRE_MESSAGE(p.has_value(), p.error().message());
  return std::move(*p);
}

Programs reference(const Model& m) {
  return compile(
      m, std::vector<OpConfig>(static_cast<size_t>(m.graph.num_ops()), OpConfig::single(0)), 1);
}

// Verifies every plan of one model and mode in one build.
void verify_all(const std::string& name, bool train,
                const std::vector<std::pair<std::string, int>>& plans) {
  auto m = example(name, train);
  std::vector<Programs> programs;
  for (const auto& [kind, n] : plans) {
    std::vector<OpConfig> c = kind == "dp"   ? baseline(*m, analysis::Baseline::kDataParallel, n)
                              : kind == "mp" ? baseline(*m, analysis::Baseline::kModelParallel, n)
                              : kind.starts_with("search:") ? searched(*m, kind.substr(7), n)
                                                            : mixed(*m, n);
    programs.push_back(compile(*m, c, n));
  }
  VerifyOptions o;
  auto results = verify_programs(reference(*m), programs, o);
  REQUIRE_MESSAGE(results.has_value(), results.error().message());
  for (size_t i = 0; i < results->size(); ++i) {
    const Comparison& c = (*results)[i].comparison;
    INFO(name, train ? " train " : " infer ", plans[i].first, " on ", plans[i].second,
         " ranks: max abs ", c.max_abs, ", max rel ", c.max_rel, " in '", c.worst, "' ", c.problem);
    MESSAGE(name, train ? " train " : " infer ", plans[i].first, " x", plans[i].second,
            ": max rel error ", c.max_rel, ", ", (*results)[i].step_ms, " ms/step");
    CHECK(c.ok);
    CHECK(c.tensors > 0);
  }
}

TEST_CASE("mlp: partitioned steps match the unpartitioned step") {
  verify_all("mlp", true,
             {{"dp", 2},
              {"mp", 4},
              {"mixed", 4},
              {"mixed", 8},
              {"search:dp", 8},
              {"search:frontier", 4},
              {"search:mcmc", 2}});
  verify_all("mlp", false,
             {{"dp", 8},
              {"mp", 2},
              {"mixed", 2},
              {"search:dp", 2},
              {"search:frontier", 8},
              {"search:mcmc", 4}});
}

TEST_CASE("transformer_block: partitioned steps match the unpartitioned step") {
  verify_all("transformer_block", true,
             {{"dp", 4},
              {"mp", 2},
              {"mixed", 4},
              {"search:dp", 8},
              {"search:frontier", 4},
              {"search:mcmc", 2}});
  verify_all("transformer_block", false,
             {{"dp", 2},
              {"mp", 8},
              {"mixed", 8},
              {"search:dp", 2},
              {"search:frontier", 8},
              {"search:mcmc", 4}});
}

TEST_CASE("small_cnn: partitioned steps match the unpartitioned step") {
  verify_all("small_cnn", true,
             {{"dp", 2},
              {"mp", 4},
              {"mixed", 8},
              {"search:dp", 8},
              {"search:frontier", 4},
              {"search:mcmc", 2}});
  verify_all("small_cnn", false,
             {{"dp", 8},
              {"mp", 2},
              {"mixed", 4},
              {"search:dp", 2},
              {"search:frontier", 8},
              {"search:mcmc", 4}});
}

TEST_CASE("lstm: partitioned steps match the unpartitioned step") {
  verify_all("lstm", true,
             {{"dp", 4},
              {"mp", 2},
              {"mixed", 2},
              {"search:dp", 8},
              {"search:frontier", 4},
              {"search:mcmc", 2}});
  verify_all("lstm", false,
             {{"dp", 2},
              {"mp", 4},
              {"mixed", 8},
              {"search:dp", 2},
              {"search:frontier", 8},
              {"search:mcmc", 4}});
}

// Bytes each rank sends in one step under ring collectives (all-reduce 2(n-1)/n of its
// buffer; reduce-scatter, all-gather and all-to-all (n-1)/n of the full buffer; a send its
// buffer), summed over ranks.
double moved_bytes(const Programs& p) {
  double total = 0;
  auto bytes = [&](int b) {
    const Buffer& buf = p.buffers[static_cast<size_t>(b)];
    return static_cast<double>(analysis::box_elements(buf.region) *
                               static_cast<int64_t>(ir::dtype_size(buf.dtype)));
  };
  for (const RankProgram& r : p.ranks)
    for (const Step& s : r.steps) {
      const double n = static_cast<double>(s.group.size());
      switch (s.kind) {
        case StepKind::kAllReduce:
          total += 2 * (n - 1) / n * bytes(s.inputs[0]);
          break;
        case StepKind::kReduceScatter:
        case StepKind::kAllToAll:
          total += (n - 1) / n * bytes(s.inputs[0]);
          break;
        case StepKind::kAllGather:
          total += (n - 1) / n * bytes(s.outputs[0]);
          break;
        case StepKind::kSend:
          total += bytes(s.inputs[0]);
          break;
        default:
          break;
      }
    }
  return total;
}

// The MLP with its first layer row-parallel (split along the reduced input features) and the
// ReLU after it split along the batch on the same ranks; everything else data-parallel.
std::vector<OpConfig> row_parallel_then_batch(const Model& m, int n) {
  std::vector<OpConfig> c = baseline(m, analysis::Baseline::kDataParallel, n);
  importers::Topology topo = importers::h100_cluster(n);
  analysis::Lowering lowering(m.graph, m.strategies, topo);
  std::vector<int> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  auto split_where = [&](const std::string& name, bool reduced) {
    ir::OpId id = ir::kNoOp;
    for (ir::OpId o = 0; o < m.graph.num_ops(); ++o)
      if (m.graph.op(o).name == name) id = o;
    REQUIRE(id != ir::kNoOp);
    for (const auto& [var, extent] : lowering.splittable(id)) {
      OpConfig k = OpConfig::split(var, all);
      int dim = lowering.output_dim_of(id, 0, k);
      if ((reduced && dim == -1) || (!reduced && dim == 0)) {
        c[static_cast<size_t>(id)] = k;
        return;
      }
    }
    FAIL("no variable of ", name);
  };
  split_where(m.graph.op(m.graph.tensor(*m.graph.find_tensor("h1")).producer).name, true);
  split_where(m.graph.op(m.graph.tensor(*m.graph.find_tensor("a1")).producer).name, false);
  return c;
}

TEST_CASE("checks: partial sums wanted split along rows become a reduce-scatter") {
  for (bool train : {false, true}) {
    auto m = example("mlp", train);
    const int n = 4;
    std::vector<OpConfig> configs = row_parallel_then_batch(*m, n);
    Programs rs = compile(*m, configs, n);
    PartitionOptions no_rs;
    no_rs.reduce_scatter = false;
    const std::optional<Programs> ar = compile(*m, configs, n, no_rs);
    int scatters = 0;
    for (const RankProgram& r : rs.ranks)
      for (const Step& s : r.steps)
        if (s.kind == StepKind::kReduceScatter) {
          ++scatters;
          CHECK(rs.buffers[static_cast<size_t>(s.inputs[0])].tensor_name == "h1");
          CHECK(s.group == std::vector<int>{0, 1, 2, 3});
          CHECK(s.axis == 0);
        }
    CHECK(scatters == n);
    for (const RankProgram& r : ar->ranks)
      for (const Step& s : r.steps) CHECK(s.kind != StepKind::kReduceScatter);
    // h1 is [64, 1024] f32: each rank sends 3/4 of 256 KiB instead of 3/2.
    MESSAGE("mlp ", train ? "train" : "infer", ": ", moved_bytes(rs),
            " bytes moved with the reduce-scatter, ", moved_bytes(*ar), " with all-reduce + Slice");
    CHECK(moved_bytes(*ar) - moved_bytes(rs) == doctest::Approx(n * 0.75 * 64 * 1024 * 4));
    CHECK(rs.to_text().find("reduce_scatter group=[0,1,2,3] axis=0") != std::string::npos);
    if (!train) continue;

    // Both compile to the same step (the training step runs the forward too).
    const std::filesystem::path work =
        std::filesystem::temp_directory_path() / "planner-codegen-rs-verify";
    std::filesystem::remove_all(work);
    VerifyOptions vo;
    vo.work_dir = work.string();
    auto results = verify_programs(reference(*m), {rs, *ar}, vo);
    REQUIRE_MESSAGE(results.has_value(), results.error().message());
    for (const VerifyResult& r : *results) {
      INFO(r.comparison.problem, " worst ", r.comparison.worst, " rel ", r.comparison.max_rel);
      CHECK(r.comparison.ok);
      CHECK(r.output.find("cpu: 4 rank(s) as threads of one process") != std::string::npos);
    }

    // The launcher's flags: the World's are accepted on cpu; --costs gathers every rank's
    // kernels at rank 0; bad flags are one line.
    const std::string launcher = (work / "build" / "build" / "l1" / "launcher").string();
    const std::string costs = (work / "costs.json").string();
    std::string out;
    CHECK(run_command(launcher + " --help", out) == 0);
    CHECK(out.find("--ranks-per-gpu N") != std::string::npos);
    CHECK(out.find("mpirun -np 4") != std::string::npos);
    CHECK(run_command(
              launcher +
                  " --steps 1 --ranks-per-gpu 2 --mpi --collective-timeout-ms=30000 --costs " +
                  costs,
              out) == 0);
    CHECK(out.find("step 1: ") != std::string::npos);
    CHECK(out.find("rank 3 peak memory: ") != std::string::npos);
    std::ifstream cf(costs);
    std::string json((std::istreambuf_iterator<char>(cf)), {});
    CHECK(json.find("\"schema\": \"planner-costs/1\"") != std::string::npos);
    CHECK(json.find("\"op_type\": \"Gemm\"") != std::string::npos);
    CHECK(run_command(launcher + " --stpes 2", out) != 0);
    CHECK(out == "error: unknown option --stpes (see --help)\n");
    CHECK(run_command(launcher + " --steps two", out) != 0);
    CHECK(out == "error: --steps: expected an integer of at least 1, got 'two'\n");
    std::filesystem::remove_all(work);

    // The rank model names it in the planner's domain (com.microsoft has no ReduceScatter).
    std::string dir = (std::filesystem::temp_directory_path() / "planner-codegen-rs-test").string();
    CompileOptions co;
    co.model_name = "mlp";
    REQUIRE(compile_to_directory(rs, co, dir).has_value());
    std::ifstream f(dir + "/rank_1.onnx", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    CHECK(check_onnx(bytes, "rank").has_value());
    CHECK(bytes.find("ReduceScatter") != std::string::npos);
    CHECK(bytes.find("ai.planner.comm") != std::string::npos);
    std::filesystem::remove_all(dir);
  }
}

// Pads (reflect and constant) and slices (strided and plain), so that training also needs
// PadGrad, SliceGrad, a Pad (from the plain slice) and a Slice (from the constant pad).
constexpr const char* kPadsAndSlices = R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
pads_and_slices (float[8,6,10] x) => (float[8,6,4] y)
<
  float[10,12] w1 = {}, float[14,8] w2 = {},
  int64[6] reflect = {0, 0, 1, 0, 0, 1},
  int64[1] s_start = {1}, int64[1] s_end = {100}, int64[1] s_axis = {2}, int64[1] s_step = {2},
  int64[6] zeros = {0, 1, 0, 0, 1, 0},
  int64[2] c_start = {1, 0}, int64[2] c_end = {7, 4}, int64[2] c_axes = {1, 2}
>
{
  h = MatMul(x, w1)
  p = Pad<mode = "reflect">(h, reflect)
  q = MatMul(p, w2)
  s = Slice(q, s_start, s_end, s_axis, s_step)
  z = Pad(s, zeros)
  r = Relu(z)
  y = Slice(r, c_start, c_end, c_axes)
}
)ONNX";

TEST_CASE("checks: Pad, SliceGrad and PadGrad run sharded along axes they leave untouched") {
  for (bool train : {false, true}) {
    auto g = importers::import_model_text(kPadsAndSlices, "pads_and_slices.onnxtxt");
    REQUIRE_MESSAGE(g.has_value(), g.error().message());
    auto m = prepare(std::move(*g), train);
    Programs dp = compile(*m, baseline(*m, analysis::Baseline::kDataParallel, 4), 4);
    std::set<std::string> native;
    for (const OpReport& r : dp.ops) {
      if (r.op_type == "Pad" || r.op_type == "SliceGrad" || r.op_type == "PadGrad") {
        INFO(r.name, " (", r.op_type, ") ", r.config);
        CHECK(r.native);
        native.insert(r.op_type);
      }
    }
    CHECK(native == (train ? std::set<std::string>{"Pad", "PadGrad", "SliceGrad"}
                           : std::set<std::string>{"Pad"}));
    if (!train) continue;
    // The training step runs the forward too; the mixed plan splits some of them along padded
    // or sliced axes (the fallback).
    std::vector<Programs> programs = {dp, compile(*m, mixed(*m, 4), 4)};
    auto results = verify_programs(reference(*m), programs, {});
    REQUIRE_MESSAGE(results.has_value(), results.error().message());
    for (const VerifyResult& r : *results) {
      INFO(r.comparison.problem, " worst ", r.comparison.worst, " rel ", r.comparison.max_rel);
      CHECK(r.comparison.ok);
    }
  }
}

TEST_CASE(
    "checks: a Conv split along its kernel window runs whole, ReduceSum's axes do not stop it") {
  auto m = example("small_cnn", true);
  std::vector<OpConfig> c = baseline(*m, analysis::Baseline::kDataParallel, 2);
  ir::OpId conv = ir::kNoOp;
  for (ir::OpId id = 0; id < m->graph.num_ops() && conv == ir::kNoOp; ++id)
    if (m->graph.op(id).op_type == "Conv") conv = id;
  REQUIRE(conv != ir::kNoOp);
  c[static_cast<size_t>(conv)] = OpConfig::split("k2", {0, 1});  // partial sums over kernel columns
  Programs p = compile(*m, c, 2);
  for (const OpReport& r : p.ops) {
    INFO(r.name, " (", r.op_type, ") ", r.config, ": ", r.why);
    if (r.name == m->graph.op(conv).name) {
      CHECK_FALSE(r.native);
      CHECK(r.why == "split of the kernel window");
    }
  }
  // Data parallelism on the MLP runs every operator natively, the bias gradients' ReduceSum
  // (split along the reduced batch, with a constant axes input) included.
  auto mlp = example("mlp", true);
  Programs dp = compile(*mlp, baseline(*mlp, analysis::Baseline::kDataParallel, 2), 2);
  int reduce_sums = 0;
  for (const OpReport& r : dp.ops) {
    INFO(r.name, " (", r.op_type, ") ", r.config, ": ", r.why);
    CHECK(r.native);
    reduce_sums += r.op_type == "ReduceSum";
  }
  CHECK(reduce_sums > 0);
}

TEST_CASE("checks: a plan without its all-reduce is caught, and rank models pass the checker") {
  auto m = example("mlp", true);
  Programs good = compile(*m, baseline(*m, analysis::Baseline::kDataParallel, 2), 2);
  // The all-reduces of the weight gradients become plain copies: each rank updates its
  // parameters with its own half-batch gradient.
  Programs bad = good;
  int removed = 0;
  for (RankProgram& r : bad.ranks)
    for (Step& s : r.steps)
      if (s.kind == StepKind::kAllReduce) {
        s.kind = StepKind::kKernel;
        s.op_type = "Identity";
        s.group.clear();
        ++removed;
      }
  REQUIRE(removed > 0);
  auto results = verify_programs(reference(*m), {good, bad}, {});
  REQUIRE_MESSAGE(results.has_value(), results.error().message());
  CHECK((*results)[0].comparison.ok);
  CHECK_FALSE((*results)[1].comparison.ok);

  // Every rank model passes onnx::checker; whole-world collectives use com.microsoft.
  std::string dir = (std::filesystem::temp_directory_path() / "planner-codegen-onnx-test").string();
  CompileOptions co;
  co.model_name = "mlp";
  REQUIRE(compile_to_directory(good, co, dir).has_value());
  for (int r = 0; r < 2; ++r) {
    std::ifstream f(dir + "/rank_" + std::to_string(r) + ".onnx", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    CHECK(check_onnx(bytes, "rank").has_value());
    CHECK(bytes.find("com.microsoft") != std::string::npos);
    CHECK(bytes.find("AllReduce") != std::string::npos);
  }
  CHECK(std::filesystem::exists(dir + "/manifest.json"));
  CHECK(std::filesystem::exists(dir + "/launcher/program.cpp"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("checks: a model with hostile names compiles and runs") {
  const std::string weird = "w\"q\\x\n*/ ??/ ??= \xc3\xa9\t";
  ir::Graph g;
  g.name = "hostile \"model\"";
  ir::Tensor x{.name = "input " + weird,
               .dtype = ir::DType::kFloat32,
               .shape = {8, 16},
               .role = ir::TensorRole::kInput};
  ir::Tensor w{.name = "weight " + weird,
               .dtype = ir::DType::kFloat32,
               .shape = {16, 4},
               .role = ir::TensorRole::kParameter};
  ir::Tensor h{.name = "hidden " + weird, .dtype = ir::DType::kFloat32, .shape = {8, 4}};
  ir::Tensor y{.name = "out " + weird, .dtype = ir::DType::kFloat32, .shape = {8, 4}};
  ir::TensorId xi = g.add_tensor(x), wi = g.add_tensor(w), hi = g.add_tensor(h),
               yi = g.add_tensor(y);
  g.add_op(
      ir::Op{.name = "matmul " + weird, .op_type = "MatMul", .inputs = {xi, wi}, .outputs = {hi}});
  g.add_op(ir::Op{.name = "relu */ " + weird, .op_type = "Relu", .inputs = {hi}, .outputs = {yi}});
  g.inputs = {xi};
  g.outputs = {yi};
  REQUIRE(g.finalize("hostile").has_value());
  for (bool train : {true, false}) {
    auto m = prepare(g, train);
    std::vector<Programs> programs = {
        compile(*m, baseline(*m, analysis::Baseline::kDataParallel, 2), 2),
        compile(*m, baseline(*m, analysis::Baseline::kModelParallel, 2), 2)};
    for (const Programs& p : programs) {
      std::string source = launcher_program_source(p);
      CHECK(source.find("\n*/") == std::string::npos);
      CHECK(source.find("??/") == std::string::npos);
    }
    auto results = verify_programs(reference(*m), programs, {});
    REQUIRE_MESSAGE(results.has_value(), results.error().message());
    for (const VerifyResult& r : *results) CHECK(r.comparison.ok);
  }
}

}  // namespace
}  // namespace planner::codegen

namespace planner::codegen {
namespace {

// The generated launcher tables of a tiny two-rank data-parallel plan, against a golden file
// (PLANNER_UPDATE_GOLDEN=1 rewrites it).
TEST_CASE("checks: golden launcher of a tiny data-parallel plan") {
  ir::Graph g;
  g.name = "tiny";
  ir::TensorId x = g.add_tensor(
      {.name = "x", .dtype = ir::DType::kFloat32, .shape = {4, 3}, .role = ir::TensorRole::kInput});
  ir::TensorId w = g.add_tensor({.name = "w",
                                 .dtype = ir::DType::kFloat32,
                                 .shape = {3, 2},
                                 .role = ir::TensorRole::kParameter});
  ir::TensorId h = g.add_tensor({.name = "h", .dtype = ir::DType::kFloat32, .shape = {4, 2}});
  ir::TensorId y = g.add_tensor({.name = "y", .dtype = ir::DType::kFloat32, .shape = {4, 2}});
  g.add_op(ir::Op{.name = "mm", .op_type = "MatMul", .inputs = {x, w}, .outputs = {h}});
  g.add_op(ir::Op{.name = "relu", .op_type = "Relu", .inputs = {h}, .outputs = {y}});
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize("tiny").has_value());
  auto m = prepare(g, false);
  Programs p = compile(*m, baseline(*m, analysis::Baseline::kDataParallel, 2), 2);
  std::string actual = p.to_text() + "\n" + launcher_program_source(p);
  std::filesystem::path golden = testing::source_dir() / "tests/codegen/golden/tiny_dp2.txt";
  if (const char* u = std::getenv("PLANNER_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(golden) << actual;
    MESSAGE("updated ", golden.string());
    return;
  }
  std::ifstream f(golden);
  std::string expected((std::istreambuf_iterator<char>(f)), {});
  CHECK_MESSAGE(actual == expected, "generated launcher differs from ", golden.string(),
                " (PLANNER_UPDATE_GOLDEN=1 refreshes it)\n", actual);
}

// ---- training-mode exports ------------------------------------------------------------------

// BatchNormalization with batch statistics (opset 15's three outputs, the running mean read),
// Dropout with training_mode, and the attention reshapes torch's batch-first
// nn.MultiheadAttention exports: [S, B, E] -> [S, B*H, D] -> [B*H, S, D] and back, with the
// output projection on rows [S*B] (B = 4, S = 5, E = 12, H = 2, D = 6).
constexpr const char* kTrainingMode = R"ONNX(
<ir_version: 8, opset_import: ["" : 15]>
train_mode (float[4,3,6,6] img, float[4,5,12] x) => (float[4,2,6,6] y, float[2] running_mean, float[4,5,12] z)
<float[2,3,3,3] w = {}, float[2] scale = {}, float[2] bias = {}, float[2] mean = {}, float[2] var = {},
 float[12,12] w_in = {}, float[12,12] w_out = {}, float[12] b_out = {},
 int64[3] heads = {5, 8, 6}, int64[2] rows = {20, 12}, int64[3] back = {5, 4, 12}>
{
  c = Conv<pads = [1, 1, 1, 1]>(img, w)
  bn, running_mean, running_var = BatchNormalization<training_mode = 1, momentum = 0.8>(c, scale, bias, mean, var)
  ratio = Constant<value = float {0.25}>()
  train = Constant<value = bool {1}>()
  r = Relu(bn)
  y, y_mask = Dropout(r, ratio, train)
  t = Transpose<perm = [1, 0, 2]>(x)
  p = MatMul(t, w_in)
  h = Reshape(p, heads)
  q = Transpose<perm = [1, 0, 2]>(h)
  k = Transpose<perm = [0, 2, 1]>(q)
  sc = MatMul(q, k)
  pr = Softmax<axis = -1>(sc)
  d, d_mask = Dropout(pr, ratio, train)
  o = MatMul(d, q)
  u = Transpose<perm = [1, 0, 2]>(o)
  flat = Reshape(u, rows)
  g = Gemm<transB = 1>(flat, w_out, b_out)
  s = Reshape(g, back)
  z = Transpose<perm = [1, 0, 2]>(s)
}
)ONNX";

TEST_CASE(
    "training mode: batch norm, dropout and attention reshapes split the batch natively and "
    "exactly") {
  auto g = importers::import_model_text(kTrainingMode, "train_mode.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  std::set<std::string> types;
  for (const ir::Op& op : g->ops()) types.insert(op.op_type);
  CHECK(types.count("BatchNormStats"));
  CHECK(types.count("BatchNormTrain"));
  CHECK(types.count("BatchNormRunningStats"));
  CHECK(types.count("DropoutTrain"));
  CHECK_FALSE(types.count("Gemm"));  // the row-flattened projection is a MatMul on [S, B, E]
  auto m = prepare(std::move(*g), true);
  Programs dp = compile(*m, baseline(*m, analysis::Baseline::kDataParallel, 4), 4);
  std::set<std::string> seen;
  for (const OpReport& r : dp.ops) {
    INFO(r.name, " (", r.op_type, ") ", r.config, ": ", r.why);
    CHECK(r.native);
    seen.insert(r.op_type);
  }
  for (const char* t :
       {"BatchNormStats", "BatchNormTrain", "BatchNormTrainParamGrad", "BatchNormTrainGrad",
        "DropoutTrain", "DropoutGrad", "Reshape", "MatMulGradWeight", "MatMulTransB"})
    CHECK_MESSAGE(seen.count(t), t);
  std::vector<Programs> programs = {dp, compile(*m, mixed(*m, 4), 4),
                                    compile(*m, searched(*m, "dp", 4), 4)};
  auto results = verify_programs(reference(*m), programs, {});
  REQUIRE_MESSAGE(results.has_value(), results.error().message());
  for (const VerifyResult& r : *results) {
    INFO(r.comparison.problem, " worst ", r.comparison.worst, " rel ", r.comparison.max_rel);
    CHECK(r.comparison.ok);
  }
}

// Opset 13's training form: five outputs, no training_mode; the saved batch mean is read.
constexpr const char* kOpset13 = R"ONNX(
<ir_version: 7, opset_import: ["" : 13]>
bn13 (float[8,4] x) => (float[8,4] y, float[4] saved_mean)
<float[4,4] w = {}, float[4] scale = {}, float[4] bias = {}, float[4] mean = {}, float[4] var = {}>
{
  h = MatMul(x, w)
  b, m, v, saved_mean, saved_var = BatchNormalization<epsilon = 0.001>(h, scale, bias, mean, var)
  y = Relu(b)
}
)ONNX";

TEST_CASE("training: opset 13's five-output BatchNormalization") {
  auto g = importers::import_model_text(kOpset13, "bn13.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  auto m = prepare(std::move(*g), true);
  std::vector<Programs> programs = {
      compile(*m, baseline(*m, analysis::Baseline::kDataParallel, 4), 4),
      compile(*m, mixed(*m, 2), 2)};
  auto results = verify_programs(reference(*m), programs, {});
  REQUIRE_MESSAGE(results.has_value(), results.error().message());
  for (const VerifyResult& r : *results) {
    INFO(r.comparison.problem, " worst ", r.comparison.worst, " rel ", r.comparison.max_rel);
    CHECK(r.comparison.ok);
  }
}

}  // namespace
}  // namespace planner::codegen
