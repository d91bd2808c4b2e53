// Tests for importers/shrink.cpp through the importer (ImportOptions::shrink): inline models in
// ONNX's textual syntax, shrunk, then inferred again by the importer.
#include "importers/shrink.h"

#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "importers/onnx_import.h"

namespace planner::importers {
namespace {

// Reshapes by an initializer and by a Constant node, a causal mask and positions with values,
// and a [4,6,8] input: shrinking 4, 6, 8 and 24 (= 4 x 6) keeps every shape consistent.
constexpr const char* kModel = R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
shrinkable (float[4,6,8] x) => (float[4,6,6] y, float[6,8] p)
<
  float[8,8] w = {}, float[8,6] wq = {}, float[6,8] table = {},
  int64[2] flat = {24, 8},
  int64[6] positions = {0, 1, 2, 3, 4, 5}
>
{
  f = Reshape(x, flat)
  h = MatMul(f, w)
  back = Constant<value = int64[3] {4, 6, 8}>()
  b = Reshape(h, back)
  q = MatMul(b, wq)
  mask = Constant<value = float[6,6] {0, 9, 9, 9, 9, 9,
                                      0, 0, 9, 9, 9, 9,
                                      0, 0, 0, 9, 9, 9,
                                      0, 0, 0, 0, 9, 9,
                                      0, 0, 0, 0, 0, 9,
                                      0, 0, 0, 0, 0, 0}>()
  y = Add(q, mask)
  p = Gather(table, positions)
}
)ONNX";

const std::map<int64_t, int64_t> kMap = {{4, 2}, {6, 3}, {8, 4}, {24, 6}};

ir::Graph must_import(const std::string& text, const std::map<int64_t, int64_t>& shrink) {
  ImportOptions o;
  o.shrink = shrink;
  auto g = import_model_text(text, "shrinkable.onnxtxt", o);
  if (!g) FAIL("import failed: " << g.error().message());
  return std::move(*g);
}

std::vector<int64_t> shape_of(const ir::Graph& g, const std::string& name) {
  auto id = g.find_tensor(name);
  REQUIRE_MESSAGE(id.has_value(), name);
  return g.tensor(*id).shape;
}

std::string error_of(const std::string& text, const std::map<int64_t, int64_t>& shrink) {
  ImportOptions o;
  o.shrink = shrink;
  auto g = import_model_text(text, "shrinkable.onnxtxt", o);
  return g ? "(no error)" : g.error().message();
}

TEST_CASE("shrink: shapes, shape constants and tensors with values") {
  ir::Graph g = must_import(kModel, kMap);
  CHECK(shape_of(g, "x") == std::vector<int64_t>{2, 3, 4});
  CHECK(shape_of(g, "f") == std::vector<int64_t>{6, 4});
  CHECK(shape_of(g, "w") == std::vector<int64_t>{4, 4});
  CHECK(shape_of(g, "b") == std::vector<int64_t>{2, 3, 4});
  CHECK(shape_of(g, "wq") == std::vector<int64_t>{4, 3});
  CHECK(shape_of(g, "y") == std::vector<int64_t>{2, 3, 3});
  CHECK(g.tensor(*g.find_tensor("flat")).int_values() == std::vector<int64_t>{6, 4});
  // The mask keeps its leading 3x3 block: still causal.
  const ir::Tensor& mask = g.tensor(*g.find_tensor("mask"));
  REQUIRE(mask.data.size() == 9 * sizeof(float));
  std::vector<float> v(9);
  std::memcpy(v.data(), mask.data.data(), mask.data.size());
  CHECK(v == std::vector<float>{0, 9, 9, 0, 0, 9, 0, 0, 0});
  CHECK(g.tensor(*g.find_tensor("positions")).int_values() == std::vector<int64_t>{0, 1, 2});
  CHECK(shape_of(g, "p") == std::vector<int64_t>{3, 4});
  // The same model without the map is untouched.
  CHECK(shape_of(must_import(kModel, {}), "y") == std::vector<int64_t>{4, 6, 6});
}

TEST_CASE("shrink: the map applies once, all at once") {
  // 8 -> 4 and 4 -> 2 together: an 8 becomes 4 (not 2), a 4 becomes 2.
  ir::Graph g = must_import(kModel, kMap);
  CHECK(shape_of(g, "h") == std::vector<int64_t>{6, 4});
  // A shape constant keeps its length (a rank) when the map has that number: 2 and 3 here.
  ir::Graph h = must_import(kModel, {{2, 1}, {3, 5}});
  CHECK(shape_of(h, "f") == std::vector<int64_t>{24, 8});
  CHECK(shape_of(h, "b") == std::vector<int64_t>{4, 6, 8});
}

TEST_CASE("shrink: recurrent hidden sizes and Split sizes") {
  const char* lstm = R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
rnn (float[5,3,8] x) => (float[5,1,3,16] y, float[5,3,8] a, float[5,3,8] b)
<
  float[1,64,8] w = {}, float[1,64,16] r = {}, int64[2] halves = {8, 8}
>
{
  y, h, c = LSTM<hidden_size = 16>(x, w, r)
  both = Concat<axis = 2>(x, x)
  a, b = Split<axis = 2>(both, halves)
}
)ONNX";
  ir::Graph g = must_import(lstm, {{16, 4}, {64, 16}, {8, 2}});
  CHECK(shape_of(g, "y") == std::vector<int64_t>{5, 1, 3, 4});
  CHECK(shape_of(g, "r") == std::vector<int64_t>{1, 16, 4});
  CHECK(shape_of(g, "a") == std::vector<int64_t>{5, 3, 2});
  CHECK(shape_of(g, "b") == std::vector<int64_t>{5, 3, 2});
}

TEST_CASE("shrink: errors") {
  CHECK(error_of(kModel, {{6, 0}}) ==
        "shrinkable.onnxtxt: --shrink 6=0: dimensions must be positive");
  CHECK(error_of(kModel, {{6, 7}, {24, 28}}) ==
        "shrinkable.onnxtxt: initializer 'positions': cannot grow dimension 0 from 6 to 7: it "
        "holds values");
  // A map that breaks a shape relation is caught by the importer's inference.
  CHECK(error_of(kModel, {{24, 5}}) != "(no error)");
}

}  // namespace
}  // namespace planner::importers
