// The training graph's backward operators run on the runtime's kernels exactly as
// analysis/training_graph.cpp emits them: small forward graphs (LayerNormalization, the
// reductions, BatchNormalization, Slice/Pad, LSTM, GRU, RNN) are differentiated, every op of
// the step runs through run_kernel, and each parameter's gradient is checked against central
// differences of the step's loss 0.5*mean(y^2) computed by the forward ops alone.
#include <cstring>
#include <map>
#include <set>

#include "analysis/training_graph.h"
#include "ir/graph.h"
#include "rt_test_util.h"
#include "training_executor.h"

using namespace rt_test;
namespace ir = planner::ir;
namespace an = planner::analysis;
using IShape = std::vector<int64_t>;

namespace {

/// Builds a small forward graph tensor by tensor, op by op.
struct GraphBuilder {
  ir::Graph g;

  ir::TensorId tensor(const std::string& name, IShape shape, ir::TensorRole role,
                      ir::DType dtype = ir::DType::kFloat32) {
    ir::Tensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.role = role;
    ir::TensorId id = g.add_tensor(std::move(t));
    if (role == ir::TensorRole::kInput) g.inputs.push_back(id);
    return id;
  }
  ir::TensorId input(const std::string& n, IShape s) {
    return tensor(n, std::move(s), ir::TensorRole::kInput);
  }
  ir::TensorId param(const std::string& n, IShape s) {
    return tensor(n, std::move(s), ir::TensorRole::kParameter);
  }
  ir::TensorId act(const std::string& n, IShape s) {
    return tensor(n, std::move(s), ir::TensorRole::kActivation);
  }
  ir::TensorId ints(const std::string& n, std::vector<int64_t> v) {
    ir::TensorId id =
        tensor(n, {static_cast<int64_t>(v.size())}, ir::TensorRole::kConstant, ir::DType::kInt64);
    auto& data = g.tensor(id).data;
    data.resize(v.size() * 8);
    std::memcpy(data.data(), v.data(), data.size());
    return id;
  }
  ir::TensorId floats(const std::string& n, IShape s, std::vector<float> v) {
    ir::TensorId id = tensor(n, std::move(s), ir::TensorRole::kConstant);
    auto& data = g.tensor(id).data;
    data.resize(v.size() * 4);
    std::memcpy(data.data(), v.data(), data.size());
    return id;
  }
  void op(const std::string& type, std::vector<ir::TensorId> ins, std::vector<ir::TensorId> outs,
          std::map<std::string, ir::Attribute> attrs = {}) {
    ir::Op o;
    o.name = type + std::to_string(g.num_ops());
    o.op_type = type;
    o.inputs = std::move(ins);
    o.outputs = std::move(outs);
    o.attributes = std::move(attrs);
    g.add_op(std::move(o));
  }
};

/// Differentiates `fwd`, runs the whole step and checks every parameter's gradient (and its
/// SGD update) against central differences of the loss.
void check_step(ir::Graph fwd, const std::vector<std::string>& expect_ops, double eps = 1e-2,
                double atol = 5e-3, double rtol = 2e-2) {
  auto fin = fwd.finalize("test");
  REQUIRE_MESSAGE(fin.has_value(), (fin ? "" : fin.error().message()));
  an::TrainingOptions options;
  options.learning_rate = 0.5;
  auto tg = an::build_training_graph(fwd, options, "test");
  REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
  CHECK(tg->opaque_backward_types.empty());
  std::set<std::string> types;
  for (const ir::Op& op : tg->graph.ops()) types.insert(op.op_type);
  for (const std::string& t : expect_ops) {
    INFO("the training graph has " << t);
    CHECK(types.count(t) == 1);
  }
  Executor ex(*tg);
  ex.run(false);
  int checked = 0;
  for (ir::TensorId p = 0; p < fwd.num_tensors(); ++p) {
    if (fwd.tensor(p).role != ir::TensorRole::kParameter) continue;
    INFO("parameter " << fwd.tensor(p).name);
    const ir::TensorId gid = tg->grad_of_tensor[static_cast<size_t>(p)];
    REQUIRE(gid != ir::kNoTensor);
    const std::vector<float> analytic = ex.bufs[static_cast<size_t>(gid)].values();
    // The SGD update read that gradient.
    const ir::TensorId upd = *tg->graph.find_tensor(fwd.tensor(p).name + ":updated");
    std::vector<float> want = ex.bufs[static_cast<size_t>(p)].values();
    for (size_t i = 0; i < want.size(); ++i) want[i] -= 0.5f * analytic[i];
    expect_close(ex.bufs[static_cast<size_t>(upd)].values(), want, 1e-6, 1e-6);
    Buf& x = ex.bufs[static_cast<size_t>(p)];
    std::vector<float> numeric(analytic.size());
    for (int64_t i = 0; i < x.n(); ++i) {
      const float keep = x.f()[i];
      x.f()[i] = keep + static_cast<float>(eps);
      const double lp = ex.loss(fwd.outputs);
      x.f()[i] = keep - static_cast<float>(eps);
      const double lm = ex.loss(fwd.outputs);
      x.f()[i] = keep;
      numeric[static_cast<size_t>(i)] = static_cast<float>((lp - lm) / (2 * eps));
    }
    expect_close(analytic, numeric, atol, rtol);
    ++checked;
  }
  CHECK(checked > 0);
}

ir::Attribute AI(int64_t v) {
  return ir::Attribute{v};
}
ir::Attribute Is(std::vector<int64_t> v) {
  return ir::Attribute{std::move(v)};
}
ir::Attribute S(std::string v) {
  return ir::Attribute{std::move(v)};
}

}  // namespace

TEST_CASE("training step: LayerNormalization and the reductions") {
  GraphBuilder b;
  auto x = b.input("x", {3, 4, 5});
  auto p = b.param("p", {5});
  auto scale = b.param("scale", {5}), bias = b.param("bias", {5});
  auto xp = b.act("xp", {3, 4, 5}), ln = b.act("ln", {3, 4, 5});
  b.op("Mul", {x, p}, {xp});
  b.op("LayerNormalization", {xp, scale, bias}, {ln},
       {{"axis", AI(-1)}, {"epsilon", ir::Attribute{1e-5}}});
  auto mx = b.act("mx", {3, 5}), mn = b.act("mn", {3, 1, 5}), sm = b.act("sm", {3, 4, 1}),
       me = b.act("me", {1, 1, 1});
  b.op("ReduceMax", {ln}, {mx}, {{"axes", Is({-2})}, {"keepdims", AI(0)}});
  b.op("ReduceMin", {ln}, {mn}, {{"axes", Is({1})}});
  b.op("ReduceSum", {ln, b.ints("axes_sum", {-1})}, {sm});
  b.op("ReduceMean", {ln}, {me});
  b.g.outputs = {mx, mn, sm, me};
  check_step(std::move(b.g), {"LossGrad", "LayerNormGrad", "LayerNormParamGrad", "ReduceGrad"});
}

TEST_CASE("training step: BatchNormalization, Slice and Pad") {
  GraphBuilder b;
  auto x = b.input("x", {2, 3, 4});
  auto p = b.param("p", {3, 1});
  auto scale = b.param("scale", {3}), bias = b.param("bias", {3});
  auto mean = b.floats("mean", {3}, {0.1f, -0.2f, 0.3f});
  auto var = b.floats("var", {3}, {0.5f, 1.5f, 2.0f});
  auto xp = b.act("xp", {2, 3, 4}), bn = b.act("bn", {2, 3, 4}), sl = b.act("sl", {2, 2, 3}),
       pd = b.act("pd", {3, 2, 5});
  b.op("Mul", {x, p}, {xp});
  b.op("BatchNormalization", {xp, scale, bias, mean, var}, {bn},
       {{"epsilon", ir::Attribute{1e-3}}});
  b.op("Slice", {bn, b.ints("starts", {1, 1}), b.ints("ends", {3, 100}), b.ints("sl_axes", {1, 2})},
       {sl});
  b.op("Pad", {sl, b.ints("pads", {1, 0, 1, 0, 0, 1})}, {pd});
  b.g.outputs = {pd};
  check_step(std::move(b.g), {"BatchNormGrad", "BatchNormParamGrad", "Pad", "Slice"});
}

TEST_CASE("training step: LSTM (bidirectional, with and without initial states)") {
  const int64_t T = 3, B = 2, I = 2, H = 2;
  for (bool init : {true, false}) {
    INFO("initial states " << init);
    GraphBuilder b;
    auto x = b.input("x", {T, B, I});
    auto w = b.param("W", {2, 4 * H, I}), r = b.param("R", {2, 4 * H, H}),
         bb = b.param("B", {2, 8 * H});
    auto h0 = init ? b.input("h0", {2, B, H}) : ir::kNoTensor;
    auto c0 = init ? b.input("c0", {2, B, H}) : ir::kNoTensor;
    auto y = b.act("y", {T, 2, B, H}), yh = b.act("yh", {2, B, H}), yc = b.act("yc", {2, B, H});
    b.op("LSTM", {x, w, r, bb, ir::kNoTensor, h0, c0}, {y, yh, yc},
         {{"hidden_size", AI(H)}, {"direction", S("bidirectional")}});
    b.g.outputs = {y, yh};  // Y_c unused: its gradient is absent
    check_step(std::move(b.g), {"LSTMGradData", "LSTMGradWeights"}, 1e-3);
  }
}

TEST_CASE("training step: GRU and RNN (fused gradients)") {
  const int64_t T = 3, B = 2, I = 2, H = 3;
  for (const char* type : {"GRU", "RNN"}) {
    INFO(type);
    const int64_t G = std::string(type) == "GRU" ? 3 : 1;
    GraphBuilder b;
    auto x = b.input("x", {T, B, I});
    auto w = b.param("W", {1, G * H, I}), r = b.param("R", {1, G * H, H}),
         bb = b.param("B", {1, 2 * G * H}), h0 = b.param("h0", {1, B, H});
    auto y = b.act("y", {T, 1, B, H}), yh = b.act("yh", {1, B, H});
    b.op(type, {x, w, r, bb, b.ints("lens", {3, 2}), h0}, {y, yh},
         {{"hidden_size", AI(H)}, {"direction", S("reverse")}});
    b.g.outputs = {y};
    check_step(std::move(b.g), {std::string(type) + "Grad"}, 1e-3);
  }
}
