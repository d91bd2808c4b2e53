// Tests for analysis/training_graph.cpp: backward pass and optimizer update.
#include "analysis/training_graph.h"

#include <doctest/doctest.h>

#include <cstring>

namespace planner::analysis {
namespace {

using ir::Graph;
using ir::Op;
using ir::Tensor;
using ir::TensorId;
using ir::TensorRole;

TensorId add(Graph& g, const std::string& name, std::vector<int64_t> shape,
             TensorRole role = TensorRole::kActivation) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.role = role;
  return g.add_tensor(std::move(t));
}

void add_op(Graph& g, const std::string& name, const std::string& type, std::vector<TensorId> ins,
            std::vector<TensorId> outs, std::map<std::string, ir::Attribute> attrs = {}) {
  Op op;
  op.name = name;
  op.op_type = type;
  op.inputs = std::move(ins);
  op.outputs = std::move(outs);
  op.attributes = std::move(attrs);
  g.add_op(std::move(op));
}

// x[32,64] -Gemm(w1,b1)-> h -Relu-> r -MatMul(w2)-> y ; r is also added to y? no: y = r*w2
Graph mlp() {
  Graph g;
  g.name = "mlp";
  TensorId x = add(g, "x", {32, 64}, TensorRole::kInput);
  TensorId w1 = add(g, "w1", {64, 128}, TensorRole::kParameter);
  TensorId b1 = add(g, "b1", {128}, TensorRole::kParameter);
  TensorId w2 = add(g, "w2", {128, 10}, TensorRole::kParameter);
  TensorId h = add(g, "h", {32, 128});
  TensorId r = add(g, "r", {32, 128});
  TensorId y = add(g, "y", {32, 10});
  add_op(g, "fc1", "Gemm", {x, w1, b1}, {h});
  add_op(g, "relu", "Relu", {h}, {r});
  add_op(g, "fc2", "MatMul", {r, w2}, {y});
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize("mlp"));
  return g;
}

int count(const TrainingGraph& tg, const std::string& type, Phase phase) {
  int n = 0;
  for (ir::OpId id = 0; id < tg.graph.num_ops(); ++id)
    if (tg.graph.op(id).op_type == type && tg.op_phase[static_cast<size_t>(id)] == phase) ++n;
  return n;
}

TEST_CASE("an MLP gets matmul gradients, a relu gradient and SGD updates") {
  auto tg = build_training_graph(mlp(), {});
  REQUIRE(tg);
  const Graph& g = tg->graph;
  // fc2: dR = dY W2^T (Gemm), dW2 = R^T dY (Gemm); relu: UnaryGrad; fc1: dW1 (Gemm), db1
  // (ReduceSum); no dX because x is data.
  CHECK(count(*tg, "Gemm", Phase::kBackward) == 3);
  CHECK(count(*tg, "UnaryGrad", Phase::kBackward) == 1);
  CHECK(count(*tg, "ReduceSum", Phase::kBackward) == 1);
  CHECK(count(*tg, "SGD", Phase::kUpdate) == 3);
  CHECK_FALSE(g.find_tensor("grad:x"));
  REQUIRE(g.find_tensor("grad:w1"));
  CHECK(g.tensor(*g.find_tensor("grad:w1")).shape == std::vector<int64_t>{64, 128});
  CHECK(g.tensor(*g.find_tensor("grad:b1")).shape == std::vector<int64_t>{128});
  CHECK(g.tensor(*g.find_tensor("grad:r")).shape == std::vector<int64_t>{32, 128});
  // The seed comes from the output through LossGrad; updated parameters are graph outputs.
  const ir::Tensor& seed = g.tensor(*g.find_tensor("grad:y"));
  CHECK(g.op(seed.producer).op_type == "LossGrad");
  CHECK(g.op(seed.producer).inputs[0] == *g.find_tensor("y"));
  CHECK(g.tensor(*g.find_tensor("w1:updated")).shape == std::vector<int64_t>{64, 128});
  // Groups: every backward op belongs to a forward op.
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    CHECK(tg->op_group[static_cast<size_t>(id)] >= 0);
    CHECK(tg->op_group[static_cast<size_t>(id)] < 3);
  }
  // grad tables agree.
  TensorId w1 = *g.find_tensor("w1");
  CHECK(tg->grad_of_tensor[static_cast<size_t>(w1)] == *g.find_tensor("grad:w1"));
  CHECK(tg->tensor_of_grad[static_cast<size_t>(*g.find_tensor("grad:w1"))] == w1);
}

TEST_CASE("adam keeps two state tensors per parameter") {
  TrainingOptions options;
  options.optimizer = Optimizer::kAdam;
  auto tg = build_training_graph(mlp(), options);
  REQUIRE(tg);
  int states = 0;
  for (const Tensor& t : tg->graph.tensors()) states += t.role == TensorRole::kOptimizerState;
  CHECK(states == 6);
  CHECK(count(*tg, "Adam", Phase::kUpdate) == 3);
}

TEST_CASE("a tensor used twice gets its gradient parts summed") {
  Graph g;
  g.name = "res";
  TensorId x = add(g, "x", {4, 8}, TensorRole::kInput);
  TensorId w = add(g, "w", {8, 8}, TensorRole::kParameter);
  TensorId h = add(g, "h", {4, 8});
  TensorId a = add(g, "a", {4, 8});
  TensorId y = add(g, "y", {4, 8});
  add_op(g, "mm", "MatMul", {x, w}, {h});
  add_op(g, "act", "Tanh", {h}, {a});
  add_op(g, "res", "Add", {a, h}, {y});  // h feeds act and res
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize());
  auto tg = build_training_graph(g, {});
  REQUIRE(tg);
  CHECK(count(*tg, "Sum", Phase::kBackward) == 1);
  TensorId gh = *tg->graph.find_tensor("grad:h");
  CHECK(tg->graph.op(tg->graph.tensor(gh).producer).op_type == "Sum");
}

TEST_CASE("a parameter read twice: its parts summed in the backward pass, or once per step") {
  // A weight tied to two readers (an embedding and an LM head, in small): the parts are summed
  // in the backward pass, or (pipelined steps) in the optimizer step, each part then a gradient
  // of the weight that micro-batches accumulate where it is made.
  Graph g;
  g.name = "tied";
  TensorId x = add(g, "x", {4, 8}, TensorRole::kInput);
  TensorId w = add(g, "w", {8, 8}, TensorRole::kParameter);
  TensorId h = add(g, "h", {4, 8});
  TensorId y = add(g, "y", {4, 8});
  add_op(g, "first", "MatMul", {x, w}, {h});
  add_op(g, "second", "MatMul", {h, w}, {y});
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize());
  for (bool once : {false, true}) {
    CAPTURE(once);
    TrainingOptions o;
    o.sum_parameter_parts_once = once;
    auto tg = build_training_graph(g, o);
    REQUIRE(tg);
    TensorId gw = *tg->graph.find_tensor("grad:w");
    const ir::OpId sum = tg->graph.tensor(gw).producer;
    REQUIRE(tg->graph.op(sum).op_type == "Sum");
    CHECK(tg->op_phase[static_cast<size_t>(sum)] == (once ? Phase::kUpdate : Phase::kBackward));
    CHECK(tg->tensor_of_grad[static_cast<size_t>(gw)] == w);
    for (TensorId part : tg->graph.op(sum).inputs)
      CHECK((tg->tensor_of_grad[static_cast<size_t>(part)] == w) == once);
  }
}

TEST_CASE("batched matmul with a broadcast weight reduces over the batch") {
  Graph g;
  g.name = "attn";
  TensorId q = add(g, "q", {2, 4, 16, 8}, TensorRole::kInput);
  TensorId k = add(g, "k", {4, 8, 16}, TensorRole::kParameter);
  TensorId s = add(g, "s", {2, 4, 16, 16});
  add_op(g, "mm", "MatMul", {q, k}, {s});
  g.inputs = {q};
  g.outputs = {s};
  REQUIRE(g.finalize());
  auto tg = build_training_graph(g, {});
  REQUIRE(tg);
  TensorId gk = *tg->graph.find_tensor("grad:k");
  CHECK(tg->graph.tensor(gk).shape == std::vector<int64_t>{4, 8, 16});
  CHECK(count(*tg, "ReduceSum", Phase::kBackward) == 1);
}

TEST_CASE("an op without a gradient rule gets one opaque backward op") {
  Graph g;
  g.name = "custom";
  TensorId x = add(g, "x", {4, 8}, TensorRole::kInput);
  TensorId w = add(g, "w", {8}, TensorRole::kParameter);
  TensorId y = add(g, "y", {4, 8});
  Op op;
  op.name = "fancy";
  op.op_type = "Fancy";
  op.domain = "com.example";
  op.inputs = {x, w};
  op.outputs = {y};
  g.add_op(std::move(op));
  g.inputs = {x};
  g.outputs = {y};
  REQUIRE(g.finalize());
  auto tg = build_training_graph(g, {});
  REQUIRE(tg);
  CHECK(tg->opaque_backward_types == std::vector<std::string>{"com.example.Fancy"});
  CHECK(count(*tg, "Grad", Phase::kBackward) == 1);
}

}  // namespace
}  // namespace planner::analysis

// ---- the shared models in training mode --------------------------------------------------

#include <chrono>
#include <filesystem>

#include "analysis/coarsen.h"
#include "analysis/op_strategies.h"
#include "importers/onnx_import.h"
#include "tdl/library.h"
#include "tests/test_util.h"

namespace planner::analysis {
namespace {

TEST_CASE("every shared model's training graph builds and every operator is analysed") {
  PLANNER_REQUIRE_SHARED_MODELS();
  auto library = tdl::Library::builtin();
  REQUIRE(library);
  for (std::string name :
       {"alexnet.onnx", "bert_base.onnx", "gpt2_small.onnx", "inception_v3.onnx", "lstm_lm.onnx",
        "lstm_lm_unrolled.onnx", "mlp_8192x4.onnx", "resnet50.onnx", "vgg16.onnx"}) {
    CAPTURE(name);
    auto path = (testing::shared_models_dir() / name).string();
    auto forward = importers::import_model(path);
    REQUIRE_MESSAGE(forward.has_value(), (forward ? "" : forward.error().message()));
    TrainingOptions options;
    options.optimizer = Optimizer::kAdam;
    auto start = std::chrono::steady_clock::now();
    auto tg = build_training_graph(*forward, options, name);
    REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
    CHECK(tg->opaque_backward_types.empty());
    StrategyCache cache(*library);
    auto all = analyze_graph(cache, tg->graph, name);
    REQUIRE_MESSAGE(all.has_value(), (all ? "" : all.error().message()));
    CHECK_MESSAGE(all->undescribed.empty(), "undescribed: ", all->undescribed.size());
    Coarsening c = coarsen(tg->graph, tg->op_group, [&](ir::OpId id) {
      const OpStrategies* s = all->per_op[static_cast<size_t>(id)];
      return !s->replicated && s->analysis->elementwise;
    });
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(name, ": ", forward->num_ops(), " forward ops, ", tg->graph.num_ops(),
            " training ops, ", c.groups.size(), " groups, ", c.num_classes, " classes, ",
            c.blocks.size(), " repeated blocks, ", ms, " ms");
    // Every parameter has a gradient and an update.
    for (ir::TensorId t = 0; t < forward->num_tensors(); ++t)
      if (forward->tensor(t).role == ir::TensorRole::kParameter)
        CHECK(tg->grad_of_tensor[static_cast<size_t>(t)] != ir::kNoTensor);
  }
}

// Clip's gradient: constant bounds become the attributes min and max and only X is kept (the
// gradient passes where lo <= x <= hi); a computed bound keeps X and Y (it passes where y == x).
// The backward pass used to read X in both slots with no bounds, so every element passed.
TEST_CASE("Clip's gradient reads its bounds") {
  for (bool constant : {true, false}) {
    Graph g;
    TensorId x = add(g, "x", {4, 8}, TensorRole::kParameter);
    TensorId lo = add(g, "lo", {}, constant ? TensorRole::kConstant : TensorRole::kParameter);
    const float v = -0.5f;
    g.tensor(lo).data.resize(4);
    std::memcpy(g.tensor(lo).data.data(), &v, 4);
    TensorId y = add(g, "y", {4, 8});
    add_op(g, "clip", "Clip", {x, lo}, {y});
    g.inputs = {};
    g.outputs = {y};
    REQUIRE(g.finalize("clip"));
    auto tg = build_training_graph(g, {});
    REQUIRE_MESSAGE(tg.has_value(), tg.error().message());
    const Op* grad = nullptr;
    for (ir::OpId id = 0; id < tg->graph.num_ops(); ++id)
      if (tg->graph.op(id).op_type == "UnaryGrad") grad = &tg->graph.op(id);
    REQUIRE(grad);
    CAPTURE(constant);
    if (constant) {
      CHECK(grad->float_attr("min", 0) == doctest::Approx(-0.5));
      CHECK(grad->float_attr("max", 0) > 1e38);
      CHECK(grad->inputs[1] == x);
      CHECK(grad->inputs[2] == x);
    } else {
      CHECK_FALSE(grad->attributes.count("min"));
      CHECK(grad->inputs[1] == x);
      CHECK(grad->inputs[2] == y);
    }
  }
}

}  // namespace
}  // namespace planner::analysis
