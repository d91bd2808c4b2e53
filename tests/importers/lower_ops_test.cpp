// Tests for importers/lower_ops.cpp: InstanceNormalization (GroupNorm's export), integer-factor
// nearest Resize and reductions over adjacent axes are imported as described operators; forms
// the rewrite would change are left alone. (The values are checked against onnxruntime by
// tests/codegen/ort_compare_test.sh: the UNet and Swin models of the corpus.)
#include "importers/lower_ops.h"

#include <string>

#include <doctest/doctest.h>

#include "importers/onnx_import.h"
#include "op_count.h"

namespace planner::importers {
namespace {

const ir::Op& only(const ir::Graph& g, const std::string& type) {
  for (const ir::Op& op : g.ops())
    if (op.op_type == type) return op;
  FAIL("no " << type);
  return g.op(0);
}

}  // namespace

TEST_CASE("lower_ops: GroupNorm's InstanceNormalization becomes LayerNormalization over axis 2") {
  // nn.GroupNorm(4, 8) as torch exports it before opset 18.
  auto g = import_model_text(R"(<ir_version: 8, opset_import: ["" : 13]>
gn (float[2,8,5,5] x) => (float[2,8,5,5] y) <float[8,1,1] w = {}, float[8,1,1] b = {}> {
  s1 = Constant<value = int64[3] {2, 4, -1}>()
  ones = Constant<value = float[4] {1.0, 1.0, 1.0, 1.0}>()
  zeros = Constant<value = float[4] {0.0, 0.0, 0.0, 0.0}>()
  s2 = Constant<value = int64[4] {2, 8, 5, 5}>()
  r = Reshape(x, s1)
  n = InstanceNormalization<epsilon = 1e-5>(r, ones, zeros)
  back = Reshape(n, s2)
  m = Mul(back, w)
  y = Add(m, b)
})",
                             "gn.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  CHECK(count_ops(*g, "InstanceNormalization") == 0);
  const ir::Op& ln = only(*g, "LayerNormalization");
  CHECK(ln.int_attr("axis", 0) == 2);
  CHECK(ln.float_attr("epsilon", 0) == doctest::Approx(1e-5));
  CHECK(g->tensor(ln.inputs[1]).shape == std::vector<int64_t>{50});  // ones over [C/G * H * W]
  CHECK(count_ops(*g, "Mul") == 1);  // constant ones and zeros: no affine step of its own
}

TEST_CASE("lower_ops: InstanceNormalization with a learned scale keeps it per channel") {
  auto g = import_model_text(R"(<ir_version: 8, opset_import: ["" : 13]>
in (float[2,3,4,4] x) => (float[2,3,4,4] y) <float[3] s = {}, float[3] b = {}> {
  y = InstanceNormalization(x, s, b)
})",
                             "in.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  const ir::Op& ln = only(*g, "LayerNormalization");
  CHECK(g->tensor(ln.inputs[1]).shape == std::vector<int64_t>{4, 4});
  CHECK(g->tensor(only(*g, "Mul").outputs[0]).shape == std::vector<int64_t>{2, 3, 4, 4});
  CHECK(count_ops(*g, "Add") == 1);
  CHECK(count_ops(*g, "Reshape") == 2);  // scale and B viewed as [3, 1, 1]
}

TEST_CASE("lower_ops: nearest Resize by integer factors becomes Reshape, Expand, Reshape") {
  // nn.Upsample(scale_factor=2, mode="nearest") at opset 13.
  auto g = import_model_text(R"(<ir_version: 8, opset_import: ["" : 13]>
up (float[1,2,3,4] x) => (float[1,2,6,8] y) {
  scales = Constant<value = float[4] {1.0, 1.0, 2.0, 2.0}>()
  y = Resize<coordinate_transformation_mode = "asymmetric", mode = "nearest", nearest_mode = "floor">(x, , scales)
})",
                             "up.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  CHECK(count_ops(*g, "Resize") == 0);
  CHECK(g->tensor(only(*g, "Expand").outputs[0]).shape == std::vector<int64_t>{1, 2, 3, 2, 4, 2});
  CHECK(count_ops(*g, "Reshape") == 2);

  // Linear interpolation, and a floor rule that shifts half pixels, stay Resize.
  for (
      std::string attrs :
      {R"(mode = "linear")",
       R"(coordinate_transformation_mode = "half_pixel", mode = "nearest", nearest_mode = "floor")"}) {
    CAPTURE(attrs);
    auto kept = import_model_text(R"(<ir_version: 8, opset_import: ["" : 13]>
up (float[1,2,3,4] x) => (float[1,2,6,8] y) {
  scales = Constant<value = float[4] {1.0, 1.0, 2.0, 2.0}>()
  y = Resize<)" + attrs + R"(>(x, , scales)
})",
                                  "up.onnxtxt");
    REQUIRE_MESSAGE(kept.has_value(), kept.error().message());
    CHECK(count_ops(*kept, "Resize") == 1);
  }
}

TEST_CASE("lower_ops: a reduction over adjacent axes reduces one merged axis") {
  // Swin's final x.mean((1, 2)) over the window positions.
  auto g = import_model_text(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[2,7,7,16] x) => (float[2,16] y, float[2,1,1,16] z) {
  y = ReduceMean<axes = [1, 2], keepdims = 0>(x)
  z = ReduceMax<axes = [2, 1]>(x)
})",
                             "m.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), g.error().message());
  for (const ir::Op& op : g->ops()) {
    if (op.op_type != "ReduceMean" && op.op_type != "ReduceMax") continue;
    CHECK(op.ints_attr("axes") == std::vector<int64_t>{1});
    CHECK(g->tensor(op.inputs[0]).shape == std::vector<int64_t>{2, 49, 16});
  }
  CHECK(count_ops(*g, "Reshape") == 3);  // two merges, and keepdims' [2, 1, 1, 16] back

  // The spatial pair of NCHW is described as it is; apart axes are left to the description.
  auto kept = import_model_text(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[2,3,4,5] x) => (float[2,3,1,1] y, float[3,5] z) {
  y = ReduceMean<axes = [2, 3]>(x)
  z = ReduceSum<keepdims = 0>(x, axes)
  axes = Constant<value = int64[2] {0, 2}>()
})",
                                "m.onnxtxt");
  REQUIRE_MESSAGE(kept.has_value(), kept.error().message());
  CHECK(count_ops(*kept, "Reshape") == 0);
}

}  // namespace planner::importers
