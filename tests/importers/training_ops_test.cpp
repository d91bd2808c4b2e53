// Tests for importers/training_ops.cpp and importers/unflatten_linear.cpp, through the
// importer: training-mode BatchNormalization (opset 15 and opset 13 forms) and Dropout, the
// inference forms left alone, bad inputs as one line naming the node, and row-flattened Gemms.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "importers/onnx_import.h"
#include "importers/training_ops.h"

namespace planner::importers {
namespace {

Expected<ir::Graph> import_opset(int opset, const std::string& body,
                                 const ImportOptions& options = {}) {
  return import_model_text(
      "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n" + body,
      "model.onnxtxt", options);
}

ir::Graph must_import(int opset, const std::string& body, const ImportOptions& options = {}) {
  auto g = import_opset(opset, body, options);
  if (!g) FAIL("import failed: " << g.error().message());
  return std::move(*g);
}

const ir::Op& op_of_type(const ir::Graph& g, const std::string& type) {
  for (const ir::Op& op : g.ops())
    if (op.op_type == type) return op;
  FAIL("no operator of type " << type);
  return g.op(0);
}

std::multiset<std::string> types(const ir::Graph& g) {
  std::multiset<std::string> out;
  for (const ir::Op& op : g.ops())
    out.insert(op.domain.empty() ? op.op_type : op.domain + "." + op.op_type);
  return out;
}

constexpr const char* kBn15 = R"(
m (float[4,3,5,5] x) => (float[4,3,5,5] y)
<float[3] s = {}, float[3] b = {}, float[3] mean = {}, float[3] var = {}>
{
  y, rm, rv = BatchNormalization<training_mode = 1, epsilon = 0.001>(x, s, b, mean, var)
}
)";

TEST_CASE("training-mode BatchNormalization (opset 15): statistics, then the normalisation") {
  ir::Graph g = must_import(15, kBn15);
  CHECK(types(g) ==
        std::multiset<std::string>{"ai.planner.BatchNormStats", "ai.planner.BatchNormTrain"});
  const ir::Op& stats = op_of_type(g, "BatchNormStats");
  CHECK(stats.int_attr("count", 0) == 4 * 5 * 5);
  CHECK(g.tensor(stats.outputs[0]).shape == std::vector<int64_t>{2, 3});
  const ir::Op& bn = op_of_type(g, "BatchNormTrain");
  CHECK(bn.name == "BatchNormalization_0");  // the node keeps its name
  CHECK(bn.float_attr("epsilon", 0) == doctest::Approx(0.001));
  CHECK(bn.inputs[3] == stats.outputs[0]);
  // The running statistics nobody reads are dropped, with their inputs: no parameters left
  // but scale and bias.
  CHECK_FALSE(g.find_tensor("mean").has_value());
  CHECK_FALSE(g.find_tensor("rm").has_value());
}

TEST_CASE("opset 13's five-output form is training; its one-output form stays inference") {
  ir::Graph g = must_import(13, R"(
m (float[8,4] x) => (float[8,4] y, float[4] rm, float[4] sv)
<float[4] s = {}, float[4] b = {}, float[4] mean = {}, float[4] var = {}>
{
  y, rm, rv, sm, sv = BatchNormalization<momentum = 0.75>(x, s, b, mean, var)
}
)");
  const ir::Op& running = op_of_type(g, "BatchNormRunningStats");
  CHECK(running.float_attr("momentum", 0) == doctest::Approx(0.75));
  REQUIRE(running.outputs.size() == 4);
  CHECK(running.outputs[0] == *g.find_tensor("rm"));
  CHECK(running.outputs[1] == ir::kNoTensor);  // rv is not read
  CHECK(running.outputs[3] == *g.find_tensor("sv"));
  ir::Graph inference = must_import(13, R"(
m (float[8,4] x) => (float[8,4] y)
<float[4] s = {}, float[4] b = {}, float[4] mean = {}, float[4] var = {}>
{
  y = BatchNormalization(x, s, b, mean, var)
}
)");
  CHECK(types(inference) == std::multiset<std::string>{"BatchNormalization"});
}

TEST_CASE("Dropout with a constant true training_mode draws a mask; false stays the identity") {
  const std::string body = R"(
m (float[2,6] x) => (float[2,6] y)
{
  r = Constant<value = float {0.1}>()
  t = Constant<value = bool {MODE}>()
  y = Dropout(x, r, t)
}
)";
  auto with = [&](const char* mode) {
    std::string b = body;
    b.replace(b.find("MODE"), 4, mode);
    return must_import(13, b);
  };
  ir::Graph train = with("1");
  const ir::Op& d = op_of_type(train, "DropoutTrain");
  CHECK(d.domain == "ai.planner");
  CHECK(d.float_attr("ratio", 0) == doctest::Approx(0.1));
  CHECK(d.int_attr("seed", -1) == dropout_seed(d.name, 0));
  REQUIRE(d.outputs.size() == 2);  // the mask the backward pass reads, though the node had none
  CHECK(train.tensor(d.outputs[1]).dtype == ir::DType::kBool);
  CHECK(train.tensor(d.outputs[1]).shape == std::vector<int64_t>{2, 6});
  CHECK(dropout_seed("a", 0) != dropout_seed("b", 0));
  CHECK(dropout_seed("a", 0) != dropout_seed("a", 1));
  ir::Graph infer = with("0");
  CHECK(types(infer) == std::multiset<std::string>{"Dropout"});
}

TEST_CASE("training-mode operators: bad inputs are one line naming the node") {
  auto g = import_opset(13, R"(
m (float[2,6] x) => (float[2,6] y)
{
  r = Constant<value = float {1.0}>()
  t = Constant<value = bool {1}>()
  y = Dropout(x, r, t)
}
)");
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().message() ==
        "model.onnxtxt: node 'Dropout_2' (Dropout): ratio 1 is outside [0, 1)");
  auto bn = import_opset(15, R"(
m (float[4] x) => (float[4] y)
<float[4] s = {}, float[4] b = {}, float[4] mean = {}, float[4] var = {}>
{
  y, rm, rv = BatchNormalization<training_mode = 1>(x, s, b, mean, var)
}
)");
  REQUIRE_FALSE(bn.has_value());
  CHECK(bn.error().message().find("node 'BatchNormalization_0'") != std::string::npos);
}

constexpr const char* kFlattenedLinear = R"(
m (float[5,8,6] x) => (float[5,4,12] y)
<float[12,12] w = {}, float[12] b = {}, int64[2] rows = {20, 12}, int64[3] back = {5, 4, 12}>
{
  f = Reshape(x, rows)
  g = Gemm<transB = 1>(f, w, b)
  y = Reshape(g, back)
}
)";

TEST_CASE("a Gemm on rows flattened from [S, B*H, D] becomes a MatMul on [S, B, E]") {
  ir::Graph g = must_import(17, kFlattenedLinear);
  CHECK(types(g) == std::multiset<std::string>{"Reshape", "ai.planner.MatMulTransB", "Add"});
  CHECK(g.tensor(*g.find_tensor("f")).shape == std::vector<int64_t>{5, 4, 12});
  CHECK(g.tensor(*g.find_tensor("g")).shape == std::vector<int64_t>{5, 4, 12});
  CHECK(op_of_type(g, "MatMulTransB").name == "Gemm_1");
  ImportOptions faithful;
  faithful.unflatten_linear = false;
  faithful.fuse_layer_norm = false;
  ir::Graph kept = must_import(17, kFlattenedLinear, faithful);
  CHECK(types(kept) == std::multiset<std::string>{"Reshape", "Gemm", "Reshape"});
}

}  // namespace
}  // namespace planner::importers
