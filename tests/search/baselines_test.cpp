// Tests for search/baselines.cpp (one-weird-trick, megatron) and, on the shared models, every
// baseline of the search table and a short mcmc run.
#include <chrono>
#include <filesystem>

#include "search/plan_builder.h"
#include "search/search.h"
#include "tests/search/search_fixture.h"

namespace planner::search {
namespace {

using testing::import_text;
using testing::prepare;

const char* kCnn = R"(<ir_version: 8, opset_import: ["" : 17]>
cnn (float[32,3,32,32] image) => (float[32,10] logits)
<float[16,3,3,3] conv_w = {}, float[64,4096] fc1_w = {}, float[10,64] fc2_w = {}>
{
  c = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(image, conv_w)
  r = Relu(c)
  p = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(r)
  f = Flatten<axis = 1>(p)
  h = Gemm<transB = 1>(f, fc1_w)
  a = Relu(h)
  logits = Gemm<transB = 1>(a, fc2_w)
}
)";

const char* kMlp = R"(<ir_version: 8, opset_import: ["" : 17]>
mlp (float[64,512] x) => (float[64,16] y)
<float[512,512] w1 = {}, float[512,16] w2 = {}>
{
  h1 = MatMul(x, w1)
  a1 = Relu(h1)
  y = MatMul(a1, w2)
}
)";

// The config of the op that produces tensor `output`.
const analysis::OpConfig& config_of(const testing::Prepared& p, const SearchResult& r,
                                    const std::string& output) {
  auto t = p.graph().find_tensor(output);
  REQUIRE_MESSAGE(t.has_value(), "no tensor " << output);
  const ir::OpId id = p.graph().tensor(*t).producer;
  REQUIRE(id != ir::kNoOp);
  return r.configs[static_cast<size_t>(id)];
}

SearchResult run(const SearchInfo& info, const testing::Prepared& p, const SearchOptions& o = {}) {
  auto r = info.run(p.context(), o);
  REQUIRE_MESSAGE(r.has_value(), info.name << ": " << (r ? "" : r.error().message()));
  return std::move(*r);
}

const SearchInfo& entry(std::string_view name) {
  auto s = find_search(name);
  REQUIRE(s.has_value());
  return **s;
}

TEST_CASE(
    "one-weird-trick: convolutions data-parallel, fully connected layers split by output "
    "features") {
  auto p = prepare(import_text(kCnn), importers::h100_cluster(4));
  SearchResult r = run(entry("one-weird-trick"), *p);
  auto dp = analysis::baseline_configs(*p->lowering, analysis::Baseline::kDataParallel, 4);
  REQUIRE(dp.has_value());
  for (const char* out : {"c", "r", "p", "f"}) {
    const ir::OpId id = p->graph().tensor(*p->graph().find_tensor(out)).producer;
    CHECK_MESSAGE(r.configs[static_cast<size_t>(id)] == (*dp)[static_cast<size_t>(id)], out);
  }
  CHECK(config_of(*p, r, "h").to_string() == "{n:4}@0-3");
  CHECK(config_of(*p, r, "logits").to_string() == "{n:4}@0-3");
  CHECK(r.notes.empty());
  CHECK(p->lowering->lower(r.configs).has_value());
}

TEST_CASE("baselines fall back to data parallelism, with a note, on models they do not fit") {
  auto p = prepare(import_text(kMlp), importers::h100_cluster(16));
  auto dp = analysis::baseline_configs(*p->lowering, analysis::Baseline::kDataParallel, 16);
  REQUIRE(dp.has_value());
  for (const char* name : {"one-weird-trick", "megatron"}) {
    SearchResult r = run(entry(name), *p);
    CHECK(r.configs == *dp);
    REQUIRE(r.notes.size() == 1);
    CHECK(r.notes[0].find("kept data parallelism") != std::string::npos);
  }
}

TEST_CASE(
    "megatron on the example transformer block: tensor parallel in a node, data parallel across") {
  auto g = importers::import_model(
      (planner::testing::source_dir() / "examples/transformer_block.onnxtxt").string());
  REQUIRE_MESSAGE(g.has_value(), (g ? "" : g.error().message()));
  auto p = prepare(std::move(*g), importers::h100_cluster(16));
  SearchResult r = run(entry("megatron"), *p);
  CHECK(r.options["nodes"] == 2);
  CHECK(r.options["tensor_parallel"] == 8);
  REQUIRE(r.notes.size() == 1);
  MESSAGE(r.notes[0]);
  CHECK(r.notes[0].find("0 column") == std::string::npos);
  CHECK(r.notes[0].find(" 0 row") == std::string::npos);
  CHECK(p->lowering->lower(r.configs).has_value());
}

// Every baseline lowers on every shared model at 8 and 16 GPUs in train mode; mcmc with a small
// cap finishes and is no slower than data parallelism.
TEST_CASE("shared models: every baseline lowers, mcmc beats or matches data parallelism") {
  PLANNER_REQUIRE_SHARED_MODELS();
  std::vector<std::filesystem::path> models;
  for (const auto& e : std::filesystem::directory_iterator(planner::testing::shared_models_dir()))
    if (e.path().extension() == ".onnx") models.push_back(e.path());
  std::sort(models.begin(), models.end());
  REQUIRE(!models.empty());
  for (const auto& path : models) {
    auto forward = importers::import_model(path.string());
    REQUIRE_MESSAGE(forward.has_value(), (forward ? "" : forward.error().message()));
    for (int n : {8, 16}) {
      const auto started = std::chrono::steady_clock::now();
      auto p = prepare(*forward, importers::h100_cluster(n));
      double dp_time = 0;
      for (const SearchInfo& info : searches()) {
        const std::string_view name = info.name;
        if (name == "dp" || name == "frontier" || name == "mcmc")
          continue;  // searches, not baselines
        SearchResult r = run(info, *p);
        auto m = evaluate_configs(*p->lowering, r.configs);
        REQUIRE_MESSAGE(m.has_value(), path.filename().string()
                                           << " " << n << " GPUs " << name << ": "
                                           << (m ? "" : m.error().message()));
        if (name == "data-parallel") dp_time = m->step_time_s;
      }
      SearchOptions o;
      o.budget_s = 0;
      o.max_proposals = 4;
      SearchResult r = run(entry("mcmc"), *p, o);
      auto m = evaluate_configs(*p->lowering, r.configs);
      REQUIRE(m.has_value());
      CHECK_MESSAGE(m->step_time_s <= dp_time * (1 + 1e-12), path.filename().string()
                                                                 << " " << n << " GPUs");
      MESSAGE(path.filename().string()
              << " " << n << " GPUs: "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
              << " s");
    }
  }
}

}  // namespace
}  // namespace planner::search
