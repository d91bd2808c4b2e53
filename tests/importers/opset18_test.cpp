// Tests for importers/opset18.cpp: opset-18 models import as the same computation at opset 17
// (the values are checked against onnxruntime in the note of the change: a Conv -> GroupNorm ->
// Mish -> Split -> Reduce model matched it within 1.4e-7).
#include "importers/opset18.h"

#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "importers/onnx_import.h"
#include "op_count.h"

namespace planner::importers {
namespace {

std::string error_of(const Expected<ir::Graph>& g) {
  return g ? "" : g.error().message();
}

}  // namespace

TEST_CASE("opset 18: reductions' axes inputs, Split's num_outputs, Mish, GroupNormalization") {
  auto g = import_model_text(R"(<ir_version: 8, opset_import: ["" : 18]>
m (float[2,8,6,6] x) => (float[2,4] y, float[1,1,1,1] z, float[2,8,6,6] n)
<float[4] s = {}, float[4] b = {}> {
  axes = Constant<value = int64[2] {2, 3}>()
  gn = GroupNormalization<num_groups = 4, epsilon = 1e-5>(x, s, b)
  n = Mish(gn)
  s1, s2 = Split<axis = 1, num_outputs = 2>(n)
  a = Add(s1, s2)
  y = ReduceMean<keepdims = 0>(a, axes)
  z = ReduceMax(a)
})",
                             "m.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), error_of(g));
  CHECK(count_ops(*g, "GroupNormalization") == 0);
  CHECK(count_ops(*g, "LayerNormalization") == 1);  // through InstanceNormalization
  CHECK(count_ops(*g, "Mish") == 0);
  CHECK(count_ops(*g, "Softplus") == 1);
  CHECK(count_ops(*g, "Tanh") == 1);
  for (const ir::Op& op : g->ops()) {
    if (op.op_type == "ReduceMean") CHECK(op.ints_attr("axes") == std::vector<int64_t>{2, 3});
    if (op.op_type == "ReduceMax") CHECK(op.ints_attr("axes").empty());
    if (op.op_type == "LayerNormalization")  // the group's ones and zeros need no affine step
      CHECK(g->tensor(op.outputs[0]).consumers.size() == 1);
  }
  CHECK(g->tensor(*g->find_tensor("y")).shape == std::vector<int64_t>{2, 4});
}

TEST_CASE("opset 18: Split's num_outputs must be the node's output count") {
  for (int k : {1, 3}) {
    auto g = import_model_text(fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
m (float[2,6] x) => (float[2,3] a, float[2,3] b) {{
  a, b = Split<axis = 1, num_outputs = {}>(x)
}})",
                                           k),
                               "m.onnxtxt");
    REQUIRE(!g);
    CHECK(
        g.error().message() ==
        fmt::format("m.onnxtxt: node '' (Split): num_outputs is {} but the node has 2 outputs", k));
  }
}

TEST_CASE("opset 18: noop_with_empty_axes, and what opset 17 cannot say is one error") {
  auto g = import_model_text(R"(<ir_version: 8, opset_import: ["" : 18]>
m (float[2,3] x) => (float[2,3] y) {
  y = ReduceMean<noop_with_empty_axes = 1>(x)
})",
                             "m.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), error_of(g));
  CHECK(count_ops(*g, "ReduceMean") == 0);  // the identity, removed by the importer

  CHECK(error_of(import_model_text(R"(<ir_version: 8, opset_import: ["" : 18]>
m (float[2,3] x, int64[1] axes) => (float[2] y) {
  y = ReduceMean<keepdims = 0>(x, axes)
})",
                                   "m.onnxtxt")) ==
        "m.onnxtxt: node '' (ReduceMean): axes 'axes' is not a constant");
  CHECK(error_of(import_model_text(R"(<ir_version: 8, opset_import: ["" : 18]>
m (int64[2] x) => (int64[2] y) {
  y = BitwiseNot(x)
})",
                                   "m.onnxtxt")) ==
        "m.onnxtxt: node '' (BitwiseNot): an opset-18 operator the planner does not support");
}

}  // namespace planner::importers
