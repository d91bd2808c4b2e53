// Tests for importers/shape_rules.cpp: output types from partially known inputs.
#include "importers/shape_rules.h"

#include <cstring>

#include <doctest/doctest.h>

namespace planner::importers {
namespace {

using Dims = std::vector<int64_t>;
constexpr int64_t U = kUnknownDim;

PartialType f32(Dims d) {
  return PartialType{ir::DType::kFloat32, std::move(d)};
}

ir::Op make_op(const std::string& type, size_t inputs, size_t outputs = 1) {
  ir::Op op;
  op.name = type;
  op.op_type = type;
  for (size_t i = 0; i < inputs; ++i) op.inputs.push_back(static_cast<ir::TensorId>(i));
  for (size_t i = 0; i < outputs; ++i) op.outputs.push_back(static_cast<ir::TensorId>(inputs + i));
  return op;
}

ir::Tensor ints(Dims values) {
  ir::Tensor t;
  t.dtype = ir::DType::kInt64;
  t.shape = {static_cast<int64_t>(values.size())};
  t.role = ir::TensorRole::kConstant;
  t.data.resize(values.size() * 8);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

// Output 0's dims; "error: ..." when the rule fails, "unknown" when it cannot tell the rank.
std::string out_dims(const ir::Op& op, std::vector<PartialType> in,
                     std::vector<const ir::Tensor*> values = {}) {
  values.resize(in.size(), nullptr);
  auto out = infer_output_types(op, in, values);
  if (!out) return "error: " + out.error().message();
  if (!(*out)[0].dims) return "unknown";
  return ir::shape_to_string(*(*out)[0].dims);
}

TEST_CASE("broadcasting keeps unknown dimensions only where nothing else decides") {
  ir::Op add = make_op("Add", 2);
  CHECK(out_dims(add, {f32({8, 1, 4}), f32({3, 1})}) == "[8,3,4]");
  CHECK(out_dims(add, {f32({U, 4}), f32({4})}) == "[-1,4]");
  CHECK(out_dims(add, {f32({U, 4}), f32({5, 1})}) == "[5,4]");
  CHECK(out_dims(add, {f32({2, 4}), f32({3, 4})}) ==
        "error: cannot broadcast shapes [2,4] and [3,4]");
  ir::Op eq = make_op("Equal", 2);
  auto out = infer_output_types(eq, std::vector<PartialType>{f32({2}), f32({2})},
                                std::vector<const ir::Tensor*>{nullptr, nullptr});
  REQUIRE(out);
  CHECK((*out)[0].dtype == ir::DType::kBool);
}

TEST_CASE("MatMul broadcasts batch dimensions and checks the inner ones") {
  ir::Op mm = make_op("MatMul", 2);
  CHECK(out_dims(mm, {f32({8, 12, 128, 64}), f32({8, 12, 64, 128})}) == "[8,12,128,128]");
  CHECK(out_dims(mm, {f32({128, 64}), f32({64})}) == "[128]");
  CHECK(out_dims(mm, {f32({3, 5}), f32({4, 2})}) ==
        "error: matrix multiplication inner dimensions differ: [3,5] x [4,2]");
}

TEST_CASE("convolution and pooling windows, including ceil_mode and SAME padding") {
  ir::Op conv = make_op("Conv", 2);
  conv.attributes["strides"] = ir::Attribute{Dims{2, 2}};
  conv.attributes["pads"] = ir::Attribute{Dims{3, 3, 3, 3}};
  CHECK(out_dims(conv, {f32({32, 3, 224, 224}), f32({64, 3, 7, 7})}) == "[32,64,112,112]");
  ir::Op pool = make_op("MaxPool", 1, 2);
  pool.attributes["kernel_shape"] = ir::Attribute{Dims{3, 3}};
  pool.attributes["strides"] = ir::Attribute{Dims{2, 2}};
  pool.attributes["ceil_mode"] = ir::Attribute{int64_t{1}};
  CHECK(out_dims(pool, {f32({1, 8, 147, 147})}) == "[1,8,73,73]");
  CHECK(out_dims(pool, {f32({1, 8, 6, 6})}) == "[1,8,3,3]");
  pool.attributes["auto_pad"] = ir::Attribute{std::string("SAME_UPPER")};
  CHECK(out_dims(pool, {f32({1, 8, 7, 7})}) == "[1,8,4,4]");
}

TEST_CASE("Reshape resolves 0 and -1, and needs its shape's values") {
  ir::Op reshape = make_op("Reshape", 2);
  ir::Tensor target = ints({0, -1, 64});
  CHECK(out_dims(reshape, {f32({8, 128, 768}), PartialType{ir::DType::kInt64, Dims{3}}},
                 {nullptr, &target}) == "[8,1536,64]");
  CHECK(out_dims(reshape, {f32({8, 128, 768}), PartialType{ir::DType::kInt64, Dims{3}}}) ==
        "unknown");
  ir::Tensor bad = ints({5, -1});
  CHECK(out_dims(reshape, {f32({2, 3}), PartialType{ir::DType::kInt64, Dims{2}}},
                 {nullptr, &bad}) == "error: cannot reshape [2,3] (6 elements) to [5,-1]");
}

TEST_CASE("Slice clamps bounds and handles negative steps") {
  ir::Op slice = make_op("Slice", 5);
  ir::Tensor starts = ints({-1, 1}), ends = ints({INT64_MIN, 1000}), axes = ints({0, 1}),
             steps = ints({-2, 3});
  PartialType i64{ir::DType::kInt64, Dims{2}};
  CHECK(out_dims(slice, {f32({7, 10}), i64, i64, i64, i64},
                 {nullptr, &starts, &ends, &axes, &steps}) == "[4,3]");
  // Unknown bounds keep the rank.
  CHECK(out_dims(slice, {f32({7, 10}), i64, i64, i64, i64}) == "[-1,-1]");
}

TEST_CASE("LSTM outputs follow the layout and direction") {
  ir::Op lstm = make_op("LSTM", 3, 3);
  lstm.attributes["hidden_size"] = ir::Attribute{int64_t{256}};
  lstm.attributes["direction"] = ir::Attribute{std::string("bidirectional")};
  auto out = infer_output_types(
      lstm, std::vector<PartialType>{f32({20, 16, 128}), f32({2, 1024, 128}), f32({2, 1024, 256})},
      std::vector<const ir::Tensor*>{nullptr, nullptr, nullptr});
  REQUIRE(out);
  CHECK(*(*out)[0].dims == Dims{20, 2, 16, 256});
  CHECK(*(*out)[1].dims == Dims{2, 16, 256});
  CHECK(*(*out)[2].dims == Dims{2, 16, 256});
}

TEST_CASE("Gather, Concat, Unsqueeze and Split") {
  CHECK(out_dims(make_op("Gather", 2),
                 {f32({50257, 768}), PartialType{ir::DType::kInt64, Dims{8, 256}}}) ==
        "[8,256,768]");
  ir::Op concat = make_op("Concat", 2);
  concat.attributes["axis"] = ir::Attribute{int64_t{1}};
  CHECK(out_dims(concat, {f32({2, 3}), f32({2, 5})}) == "[2,8]");
  CHECK(out_dims(concat, {f32({2, 3}), f32({4, 5})}) ==
        "error: inputs differ outside the concatenation axis: [2,3] and [4,5]");
  ir::Op unsqueeze = make_op("Unsqueeze", 2);
  ir::Tensor axes = ints({0, -1});
  CHECK(out_dims(unsqueeze, {f32({3, 4}), PartialType{ir::DType::kInt64, Dims{2}}},
                 {nullptr, &axes}) == "[1,3,4,1]");
  ir::Op split = make_op("Split", 1, 4);
  split.attributes["axis"] = ir::Attribute{int64_t{1}};
  auto out = infer_output_types(split, std::vector<PartialType>{f32({32, 4096})},
                                std::vector<const ir::Tensor*>{nullptr});
  REQUIRE(out);
  CHECK(*(*out)[3].dims == Dims{32, 1024});
}

}  // namespace
}  // namespace planner::importers
