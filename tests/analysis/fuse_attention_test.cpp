// Attention as one operator (analysis/fuse_attention.h), on graphs built here: which cores
// fuse, with which scale, mask and key layout, and which stay materialized and why.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "analysis/fuse_attention.h"
#include "tests/graph_build.h"

namespace an = planner::analysis;
namespace ir = planner::ir;

namespace {

// Q, K, V [2, 2, 4, 3] (batch, heads, tokens, width), made from inputs by Identity so that they
// are activations; the scores Q·K^T through a Transpose of K; then what `scores_to_probs` adds;
// the softmax and the product with V.
class Core {
 public:
  Core() {
    for (const char* n : {"q_in", "k_in", "v_in"})
      inputs_.push_back(tensor(n, {2, 2, 4, 3}, ir::TensorRole::kInput));
    q_ = unary("q", "Identity", inputs_[0], {2, 2, 4, 3});
    k_ = unary("k", "Identity", inputs_[1], {2, 2, 4, 3});
    v_ = unary("v", "Identity", inputs_[2], {2, 2, 4, 3});
    const ir::TensorId kt = tensor("kt", {2, 2, 3, 4}, ir::TensorRole::kActivation);
    ir::Op t;
    t.name = "k_t";
    t.op_type = "Transpose";
    t.attributes["perm"] = ir::Attribute{std::vector<int64_t>{0, 1, 3, 2}};
    t.inputs = {k_};
    t.outputs = {kt};
    g_.add_op(std::move(t));
    chain_ = binary("scores", "MatMul", q_, kt);
  }

  ir::TensorId constant(const std::string& name, std::vector<int64_t> shape,
                        const std::vector<float>& values) {
    const ir::TensorId id = tensor(name, std::move(shape), ir::TensorRole::kConstant);
    ir::Tensor& t = g_.tensor(id);
    t.data.resize(values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
    return id;
  }
  ir::TensorId int_constant(const std::string& name, const std::vector<int64_t>& values,
                            std::vector<int64_t> shape) {
    const ir::TensorId id = tensor(name, std::move(shape), ir::TensorRole::kConstant);
    ir::Tensor& t = g_.tensor(id);
    t.dtype = ir::DType::kInt64;
    t.data.resize(values.size() * sizeof(int64_t));
    if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
    return id;
  }
  ir::TensorId parameter(const std::string& name) {
    return tensor(name, {}, ir::TensorRole::kParameter);
  }
  // chain = type(chain, other)
  void then(const std::string& type, ir::TensorId other) {
    chain_ = binary("step" + std::to_string(steps_++), type, chain_, other);
  }
  // The softmax and the context; finalizes.
  ir::Graph& finish() {
    const ir::TensorId p = unary("softmax", "Softmax", chain_, {2, 2, 4, 4});
    g_.op(static_cast<ir::OpId>(g_.num_ops() - 1)).attributes["axis"] = ir::Attribute{int64_t{-1}};
    const ir::TensorId y = binary("context", "MatMul", p, v_);
    g_.inputs = inputs_;
    g_.outputs = {y};
    REQUIRE(g_.finalize("test").has_value());
    return g_;
  }
  ir::Graph& graph() { return g_; }

 private:
  ir::TensorId tensor(const std::string& name, std::vector<int64_t> shape, ir::TensorRole role) {
    return planner::testing::add_tensor(g_, name, std::move(shape), role);
  }
  ir::TensorId unary(const std::string& name, const std::string& type, ir::TensorId in,
                     std::vector<int64_t> shape) {
    const ir::TensorId out = tensor(name, std::move(shape), ir::TensorRole::kActivation);
    ir::Op o;
    o.name = name;
    o.op_type = type;
    o.inputs = {in};
    o.outputs = {out};
    g_.add_op(std::move(o));
    return out;
  }
  ir::TensorId binary(const std::string& name, const std::string& type, ir::TensorId a,
                      ir::TensorId b) {
    const ir::TensorId out = tensor(name, {2, 2, 4, 4}, ir::TensorRole::kActivation);
    if (type == "MatMul" && name == "context") g_.tensor(out).shape = {2, 2, 4, 3};
    ir::Op o;
    o.name = name;
    o.op_type = type;
    o.inputs = {a, b};
    o.outputs = {out};
    g_.add_op(std::move(o));
    return out;
  }

  ir::Graph g_;
  std::vector<ir::TensorId> inputs_;
  ir::TensorId q_ = ir::kNoTensor, k_ = ir::kNoTensor, v_ = ir::kNoTensor;
  ir::TensorId chain_ = ir::kNoTensor;
  int steps_ = 0;
};

std::vector<float> causal(int n, float masked) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) v.push_back(j <= i ? 0.0f : masked);
  return v;
}

// fuse_attention on a finished core; fails the test on an error.
an::AttentionFusion fuse(ir::Graph& g) {
  auto done = an::fuse_attention(g, "test");
  REQUIRE_MESSAGE(done.has_value(), (done ? "" : done.error().message()));
  return *done;
}

const ir::Op& attention(const ir::Graph& g) {
  for (const ir::Op& op : g.ops())
    if (op.op_type == "Attention") return op;
  FAIL("no Attention operator");
  return g.ops().front();
}

}  // namespace

TEST_CASE("fuse attention: scale from Div and Mul, a causal [1, s, s] constant, K untransposed") {
  Core c;
  c.then("Div", c.constant("root", {}, {2.0f}));
  c.then("Mul", c.constant("half", {}, {0.5f}));
  c.then("Add", c.constant("mask", {1, 4, 4}, causal(4, -1e9f)));
  ir::Graph& g = c.finish();
  const an::AttentionFusion done = fuse(g);
  CHECK(done.fused == 1);
  CHECK(done.causal == 1);
  const ir::Op& a = attention(g);
  CHECK(a.float_attr("scale", 0) == doctest::Approx(0.25));
  CHECK(a.int_attr("causal", 0) == 1);
  REQUIRE(a.inputs.size() == 3);             // no mask input: the kernel's own
  CHECK(g.tensor(a.inputs[1]).name == "k");  // K^T's transpose of the last two axes dropped
  CHECK(g.tensor(a.outputs[0]).name == "context");
  CHECK(g.find_op("k_t") == std::nullopt);
  CHECK(g.find_op("softmax") == std::nullopt);
}

TEST_CASE("fuse attention: another mask is the kernel's additive input") {
  Core c;
  std::vector<float> bias(16, 0.0f);
  bias[3] = -5.0f;  // not causal: a bias
  c.then("Add", c.constant("bias", {4, 4}, bias));
  ir::Graph& g = c.finish();
  const an::AttentionFusion done = fuse(g);
  CHECK(done.fused == 1);
  CHECK(done.causal == 0);
  const ir::Op& a = attention(g);
  REQUIRE(a.inputs.size() == 4);
  CHECK(g.tensor(a.inputs[3]).name == "bias");
  CHECK(a.int_attr("causal", 0) == 0);
}

TEST_CASE("fuse attention: Trilu of a ConstantOfShape fill is causal, and removed with the core") {
  Core c;
  ir::Graph& g = c.graph();
  const ir::TensorId shape = c.int_constant("shape", {4, 4}, {2});
  const ir::TensorId k = c.int_constant("one", {1}, {});
  ir::Tensor fill_t;
  fill_t.name = "fill";
  fill_t.shape = {4, 4};
  const ir::TensorId fill = g.add_tensor(fill_t);
  ir::Tensor mask_t = fill_t;
  mask_t.name = "mask";
  const ir::TensorId mask = g.add_tensor(mask_t);
  ir::Op cos;
  cos.name = "fill";
  cos.op_type = "ConstantOfShape";
  auto value = std::make_shared<ir::Tensor>();
  value->shape = {1};
  const float masked = -10000.0f;
  value->data.resize(sizeof(float));
  std::memcpy(value->data.data(), &masked, sizeof(float));
  cos.attributes["value"] = ir::Attribute{std::shared_ptr<const ir::Tensor>(value)};
  cos.inputs = {shape};
  cos.outputs = {fill};
  g.add_op(std::move(cos));
  ir::Op tri;
  tri.name = "mask";
  tri.op_type = "Trilu";
  tri.attributes["upper"] = ir::Attribute{int64_t{1}};
  tri.inputs = {fill, k};
  tri.outputs = {mask};
  g.add_op(std::move(tri));
  c.then("Add", mask);
  c.finish();
  const an::AttentionFusion done = fuse(g);
  CHECK(done.causal == 1);
  CHECK(g.find_op("mask") == std::nullopt);
  CHECK(g.find_op("fill") == std::nullopt);
}

TEST_CASE("fuse attention: a trainable scale, or a mask per batch, stays materialized") {
  {
    Core c;
    c.then("Mul", c.parameter("temperature"));
    ir::Graph& g = c.finish();
    const an::AttentionFusion done = fuse(g);
    CHECK(done.fused == 0);
    REQUIRE(done.kept.size() == 1);
    CHECK(done.kept[0].first == "softmax");
    CHECK(done.kept[0].second == "'step0' (Mul) in the scores");
  }
  {
    Core c;
    c.then("Add", c.constant("mask", {2, 1, 4, 4}, std::vector<float>(32, 0.0f)));
    ir::Graph& g = c.finish();
    const an::AttentionFusion done = fuse(g);
    CHECK(done.fused == 0);
    REQUIRE(done.kept.size() == 1);
    CHECK(done.kept[0].second == "a mask of shape [2, 1, 4, 4]");
  }
}
