// Tests for ir/graph.cpp: construction, validation, topological order, text form.
#include "ir/graph.h"

#include <cstring>

#include <doctest/doctest.h>

namespace planner::ir {
namespace {

TensorId add(Graph& g, const std::string& name, std::vector<int64_t> shape,
             TensorRole role = TensorRole::kActivation) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.role = role;
  return g.add_tensor(std::move(t));
}

OpId add_op(Graph& g, const std::string& name, const std::string& type, std::vector<TensorId> ins,
            std::vector<TensorId> outs) {
  Op op;
  op.name = name;
  op.op_type = type;
  op.inputs = std::move(ins);
  op.outputs = std::move(outs);
  return g.add_op(std::move(op));
}

// x -> MatMul(w1) -> Relu -> MatMul(w2) -> y, with ops added out of order.
Graph small_mlp() {
  Graph g;
  g.name = "mlp";
  TensorId x = add(g, "x", {32, 784}, TensorRole::kInput);
  TensorId w1 = add(g, "w1", {784, 512}, TensorRole::kParameter);
  TensorId w2 = add(g, "w2", {512, 10}, TensorRole::kParameter);
  TensorId h = add(g, "h", {32, 512});
  TensorId r = add(g, "r", {32, 512});
  TensorId y = add(g, "y", {32, 10});
  add_op(g, "fc2", "MatMul", {r, w2}, {y});
  add_op(g, "fc1", "MatMul", {x, w1}, {h});
  add_op(g, "relu", "Relu", {h}, {r});
  g.inputs = {x};
  g.outputs = {y};
  return g;
}

TEST_CASE("finalize fills producers, consumers and a topological order") {
  Graph g = small_mlp();
  REQUIRE(g.finalize("mlp.onnx"));
  CHECK(g.topo_order() == std::vector<OpId>{1, 2, 0});
  CHECK(g.tensor(*g.find_tensor("h")).producer == 1);
  CHECK(g.tensor(*g.find_tensor("h")).consumers == std::vector<OpId>{2});
  CHECK(g.tensor(*g.find_tensor("x")).producer == kNoOp);
}

TEST_CASE("text form is stable and in topological order") {
  Graph g = small_mlp();
  REQUIRE(g.finalize());
  CHECK(to_text(g) ==
        "graph mlp\n"
        "  input  x: f32[32,784]\n"
        "  param  w1: f32[784,512]\n"
        "  param  w2: f32[512,10]\n"
        "  %h: f32[32,512] = MatMul(x, w1)  # 'fc1'\n"
        "  %r: f32[32,512] = Relu(%h)  # 'relu'\n"
        "  %y: f32[32,10] = MatMul(%r, w2)  # 'fc2'\n"
        "  output %y\n");
}

TEST_CASE("a cycle is reported with the node") {
  Graph g;
  g.name = "cyc";
  TensorId a = add(g, "a", {4});
  TensorId b = add(g, "b", {4});
  add_op(g, "n1", "Relu", {b}, {a});
  add_op(g, "n2", "Relu", {a}, {b});
  auto r = g.finalize("cyc.onnx");
  REQUIRE_FALSE(r);
  CHECK(r.error().message() ==
        "cyc.onnx: node 'n1' (Relu): the graph has a cycle through this node");
}

TEST_CASE("an undefined input is reported with the node") {
  Graph g;
  TensorId a = add(g, "a", {4});
  TensorId b = add(g, "b", {4});
  add_op(g, "n1", "Relu", {a}, {b});
  auto r = g.finalize("m.onnx");
  REQUIRE_FALSE(r);
  CHECK(r.error().message().find("m.onnx: node 'n1' (Relu): input 'a' is not defined") == 0);
}

TEST_CASE("duplicate node names and double producers are rejected") {
  Graph g;
  TensorId x = add(g, "x", {4}, TensorRole::kInput);
  TensorId a = add(g, "a", {4});
  TensorId b = add(g, "b", {4});
  add_op(g, "n", "Relu", {x}, {a});
  add_op(g, "n", "Relu", {x}, {b});
  auto r = g.finalize("m.onnx");
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "m.onnx: node 'n' (Relu): duplicate node name");

  Graph g2;
  x = add(g2, "x", {4}, TensorRole::kInput);
  a = add(g2, "a", {4});
  add_op(g2, "n1", "Relu", {x}, {a});
  add_op(g2, "n2", "Relu", {x}, {a});
  r = g2.finalize("m.onnx");
  REQUIRE_FALSE(r);
  CHECK(r.error().message() ==
        "m.onnx: node 'n2' (Relu): output 'a' is also produced by node 'n1'");
}

TEST_CASE("negative and overflowing shapes are rejected") {
  Graph g;
  add(g, "x", {4, -1}, TensorRole::kInput);
  auto r = g.finalize("m.onnx");
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "m.onnx: tensor 'x' has negative dimension -1 in shape [4,-1]");

  Graph g2;
  add(g2, "x", {1LL << 40, 1LL << 30}, TensorRole::kInput);
  r = g2.finalize("m.onnx");
  REQUIRE_FALSE(r);
  CHECK(r.error().message().find("its byte size overflows") != std::string::npos);
}

TEST_CASE("erase_ops drops ops and the tensors only they used") {
  Graph g = small_mlp();
  REQUIRE(g.finalize());
  std::vector<bool> erase(3, false);
  erase[0] = true;  // fc2
  g.outputs = {*g.find_tensor("r")};
  g.erase_ops(erase);
  REQUIRE(g.finalize());
  CHECK(g.num_ops() == 2);
  CHECK_FALSE(g.find_tensor("w2"));
  CHECK_FALSE(g.find_tensor("y"));
  CHECK(g.find_op("relu"));
}

TEST_CASE("constant values convert to integers and floats") {
  Tensor t;
  t.dtype = DType::kInt64;
  t.shape = {3};
  std::vector<int64_t> v = {2, -1, 7};
  t.data.resize(24);
  std::memcpy(t.data.data(), v.data(), 24);
  CHECK(t.int_values() == v);
  CHECK(t.float_values() == std::vector<double>{2, -1, 7});
}

}  // namespace
}  // namespace planner::ir
