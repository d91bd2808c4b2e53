// Tests for importers/fuse_layer_norm.cpp: torch.onnx's element-wise layer normalisation becomes
// one LayerNormalization; chains that differ anywhere stay as they are.
#include "importers/fuse_layer_norm.h"

#include <string>

#include <doctest/doctest.h>

#include "importers/onnx_import.h"
#include "op_count.h"

namespace planner::importers {
namespace {

// nn.LayerNorm(8) as torch 1.13 exports it at opset 15; `read_normalised` adds an output that
// reads the normalised tensor before the scale.
std::string layer_norm_model(const std::string& exponent = "2.0", bool read_normalised = false) {
  std::string outputs = read_normalised ? "float[4,3,8] y, float[4,3,8] z" : "float[4,3,8] y";
  std::string extra = read_normalised ? "  z = Relu(n)\n" : "";
  return R"(<ir_version: 8, opset_import: ["" : 15]>
ln (float[4,3,8] x) => ()" +
         outputs + R"()
<float[8] gamma = {}, float[8] beta = {}> {
  two = Constant<value = float {)" +
         exponent + R"(}>()
  eps = Constant<value = float {1e-12}>()
  m = ReduceMean<axes = [-1]>(x)
  d = Sub(x, m)
  p = Pow(d, two)
  v = ReduceMean<axes = [-1]>(p)
  ve = Add(v, eps)
  s = Sqrt(ve)
  n = Div(d, s)
  g = Mul(n, gamma)
  y = Add(g, beta)
)" + extra +
         "}\n";
}

TEST_CASE("fuse_layer_norm: torch's element-wise layer norm becomes LayerNormalization") {
  auto g = import_model_text(layer_norm_model(), "ln.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  CHECK(g->num_ops() == 1);
  const ir::Op& ln = g->op(0);
  CHECK(ln.op_type == "LayerNormalization");
  CHECK(ln.int_attr("axis", 0) == -1);
  CHECK(ln.float_attr("epsilon", 0) == doctest::Approx(1e-12));
  REQUIRE(ln.inputs.size() == 3);
  CHECK(g->tensor(ln.inputs[0]).name == "x");
  CHECK(g->tensor(ln.inputs[1]).name == "gamma");
  CHECK(g->tensor(ln.inputs[2]).name == "beta");
  CHECK(g->tensor(ln.outputs[0]).name == "y");
}

TEST_CASE("fuse_layer_norm: chains that are not a layer norm stay") {
  // A cube instead of a square.
  auto cube = import_model_text(layer_norm_model("3.0"), "ln.onnxtxt");
  REQUIRE(cube.has_value());
  CHECK(count_ops(*cube, "LayerNormalization") == 0);
  CHECK(count_ops(*cube, "Pow") == 1);
  // An intermediate read by another operator keeps the whole chain.
  auto shared = import_model_text(layer_norm_model("2.0", true), "ln.onnxtxt");
  REQUIRE(shared.has_value());
  CHECK(count_ops(*shared, "LayerNormalization") == 0);
  CHECK(count_ops(*shared, "Div") == 1);
}

}  // namespace
}  // namespace planner::importers
