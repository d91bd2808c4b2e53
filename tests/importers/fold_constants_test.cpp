// Tests for importers/fold_constants.cpp on graphs built directly in the IR.
#include "importers/fold_constants.h"

#include <cstring>

#include <doctest/doctest.h>

namespace planner::importers {
namespace {

ir::TensorId add(ir::Graph& g, const std::string& name, ir::DType dtype, std::vector<int64_t> shape,
                 ir::TensorRole role = ir::TensorRole::kActivation) {
  ir::Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.role = role;
  return g.add_tensor(std::move(t));
}

ir::TensorId add_ints(ir::Graph& g, const std::string& name, std::vector<int64_t> values) {
  ir::TensorId id = add(g, name, ir::DType::kInt64, {static_cast<int64_t>(values.size())},
                        ir::TensorRole::kConstant);
  ir::Tensor& t = g.tensor(id);
  t.data.resize(values.size() * 8);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return id;
}

void add_op(ir::Graph& g, const std::string& type, std::vector<ir::TensorId> in,
            std::vector<ir::TensorId> out) {
  ir::Op op;
  op.name = type + "_" + std::to_string(g.num_ops());
  op.op_type = type;
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  g.add_op(std::move(op));
}

// x[2,5] + ConstantOfShape([2,5]) -> y, where ONNX inference is assumed to have found nothing.
ir::Graph const_of_shape_graph() {
  ir::Graph g;
  ir::TensorId x = add(g, "x", ir::DType::kFloat32, {2, 5}, ir::TensorRole::kInput);
  ir::TensorId shape = add_ints(g, "shape", {2, 5});
  ir::TensorId fill = add(g, "fill", ir::DType::kFloat32, {});
  ir::TensorId y = add(g, "y", ir::DType::kFloat32, {});
  add_op(g, "ConstantOfShape", {shape}, {fill});
  add_op(g, "Add", {x, fill}, {y});
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize("t"));
  return g;
}

TEST_CASE("folding materialises small constants and completes shapes from the rules") {
  ir::Graph g = const_of_shape_graph();
  std::vector<PartialType> none(static_cast<size_t>(g.num_tensors()));
  auto stats = fold_constants(g, none, none, FoldOptions{}, "t");
  REQUIRE(stats);
  CHECK(stats->folded_ops == 1);
  REQUIRE(g.finalize("t"));
  REQUIRE(g.num_ops() == 1);
  const ir::Tensor& fill = g.tensor(*g.find_tensor("fill"));
  CHECK(fill.role == ir::TensorRole::kConstant);
  CHECK(fill.float_values() == std::vector<double>(10, 0.0));
  CHECK(g.tensor(*g.find_tensor("y")).shape == std::vector<int64_t>{2, 5});
}

TEST_CASE("constants above the size limit stay ops, with static shapes") {
  ir::Graph g = const_of_shape_graph();
  std::vector<PartialType> none(static_cast<size_t>(g.num_tensors()));
  FoldOptions options;
  options.max_folded_elements = 4;
  auto stats = fold_constants(g, none, none, options, "t");
  REQUIRE(stats);
  CHECK(stats->folded_ops == 0);
  REQUIRE(g.finalize("t"));
  CHECK(g.num_ops() == 2);
  CHECK(g.tensor(*g.find_tensor("fill")).shape == std::vector<int64_t>{2, 5});
  CHECK(g.tensor(*g.find_tensor("fill")).role == ir::TensorRole::kActivation);
}

TEST_CASE("an output no rule, inference or declaration can shape is an error naming the node") {
  ir::Graph g;
  ir::TensorId x = add(g, "x", ir::DType::kFloat32, {3}, ir::TensorRole::kInput);
  ir::TensorId y = add(g, "y", ir::DType::kFloat32, {});
  add_op(g, "NonZero", {x}, {y});
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize("m.onnx"));
  std::vector<PartialType> none(2);
  auto stats = fold_constants(g, none, none, FoldOptions{}, "m.onnx");
  REQUIRE_FALSE(stats);
  CHECK(stats.error().message() ==
        "m.onnx: node 'NonZero_0' (NonZero): cannot infer a static shape for output 'y' (unknown "
        "rank, unknown element type)");
  // A declared type fills the gap.
  std::vector<PartialType> declared = none;
  declared[1] = PartialType{ir::DType::kInt64, std::vector<int64_t>{1, 2}};
  REQUIRE(fold_constants(g, none, declared, FoldOptions{}, "m.onnx"));
  CHECK(g.tensor(1).shape == std::vector<int64_t>{1, 2});
  CHECK(g.tensor(1).dtype == ir::DType::kInt64);
}

TEST_CASE("constants needing external values are loaded through the callback only when used") {
  ir::Graph g;
  ir::TensorId x = add(g, "x", ir::DType::kFloat32, {2, 3}, ir::TensorRole::kInput);
  ir::TensorId shape = add(g, "shape", ir::DType::kInt64, {2}, ir::TensorRole::kConstant);
  g.tensor(shape).external = ir::ExternalData{"shape.bin", 0, 16};
  ir::TensorId y = add(g, "y", ir::DType::kFloat32, {});
  add_op(g, "Reshape", {x, shape}, {y});
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize("m.onnx"));
  int loads = 0;
  FoldOptions options;
  options.load_data = [&](ir::Tensor& t) -> Expected<void> {
    ++loads;
    std::vector<int64_t> v = {3, 2};
    t.data.resize(16);
    std::memcpy(t.data.data(), v.data(), 16);
    return ok();
  };
  std::vector<PartialType> none(3);
  REQUIRE(fold_constants(g, none, none, options, "m.onnx"));
  CHECK(loads == 1);
  CHECK(g.tensor(*g.find_tensor("y")).shape == std::vector<int64_t>{3, 2});
}

}  // namespace
}  // namespace planner::importers
