// Every ai.planner gradient kernel against central differences of the forward kernel it
// differentiates, plus the optimizer updates against their formulas.
#include <algorithm>

#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::Error;

namespace {

// Forward op `op` on (x plus fixed extra inputs) -> output of `out_shape`.
std::function<std::vector<float>()> fwd(const std::string& op, Attributes attrs,
                                        std::vector<Tensor> ins, Shape out_shape) {
  return [=] {
    Buf y = Z(out_shape);
    run(op, attrs, ins, {y.t});
    return y.values();
  };
}

}  // namespace

TEST_CASE("UnaryGrad for every unary op the training graph differentiates") {
  struct U {
    const char* op;
    double lo, hi;
    Attributes attrs;
  };
  const std::vector<U> ops = {{"Relu", -1, 1, {}},
                              {"Sigmoid", -2, 2, {}},
                              {"Tanh", -2, 2, {}},
                              {"Erf", -2, 2, {}},
                              {"Sqrt", 0.5, 2, {}},
                              {"Exp", -1, 1, {}},
                              {"Log", 0.5, 2, {}},
                              {"Abs", -1, 1, {}},
                              {"Gelu", -2, 2, {}},
                              {"Gelu", -2, 2, {{"approximate", std::string("tanh")}}},
                              {"Softplus", -2, 2, {}},
                              {"LeakyRelu", -1, 1, {{"alpha", 0.2}}},
                              {"Elu", -1, 1, {}},
                              {"Selu", -1, 1, {}},
                              {"Reciprocal", 0.5, 2, {}},
                              {"Softsign", -2, 2, {}},
                              {"HardSigmoid", -2, 2, {}},
                              {"Sin", -2, 2, {}},
                              {"Cos", -2, 2, {}},
                              {"Mish", -2, 2, {}},
                              {"HardSwish", -4, 4, {}},
                              {"Tan", -1, 1, {}},
                              {"Asin", -0.8, 0.8, {}},
                              {"Acos", -0.8, 0.8, {}},
                              {"Atan", -2, 2, {}},
                              {"Sinh", -2, 2, {}},
                              {"Cosh", -2, 2, {}},
                              {"Asinh", -2, 2, {}},
                              {"Acosh", 1.2, 3, {}},
                              {"Atanh", -0.8, 0.8, {}},
                              {"Celu", -1, 1, {{"alpha", 0.7}}},
                              {"ThresholdedRelu", -1, 1, {{"alpha", 0.0}}},
                              {"Shrink", -4, 4, {{"lambd", 2.5}, {"bias", 0.3}}}};
  uint64_t seed = 100;
  for (const U& u : ops) {
    INFO(u.op);
    Buf x = R({3, 5}, seed++, u.lo, u.hi);
    // keep away from kinks where central differences straddle a corner
    for (int64_t i = 0; i < x.n(); ++i)
      for (double kink : {0.0, -3.0, 3.0, -2.5, 2.5})
        if (std::fabs(x.f()[i] - kink) < 0.05) x.f()[i] = static_cast<float>(kink + 0.1);
    Buf y = Z({3, 5}), dy = R({3, 5}, seed++), dx = Z({3, 5});
    run(u.op, u.attrs, {x.t}, {y.t});
    Attributes ga = u.attrs;
    ga["op"] = std::string(u.op);
    run_planner("UnaryGrad", ga, {dy.t, x.t, y.t}, {dx.t});
    check_grad(fwd(u.op, u.attrs, {x.t}, {3, 5}), x, dy.values(), dx.values(), 1e-3, 2e-3, 2e-2);
  }
}

TEST_CASE("UnaryGrad for Pow (broadcast exponent) and Clip") {
  Buf x = R({2, 3}, 1, 0.5, 2), e = F({3}, {2, 0.5f, 3}), y = Z({2, 3}), dy = R({2, 3}, 2),
      dx = Z({2, 3});
  run("Pow", {}, {x.t, e.t}, {y.t});
  run_planner("UnaryGrad", {{"op", std::string("Pow")}}, {dy.t, x.t, y.t, e.t}, {dx.t});
  check_grad(fwd("Pow", {}, {x.t, e.t}, {2, 3}), x, dy.values(), dx.values(), 1e-3);
  Buf xc = F({5}, {-2, -0.5f, 0.2f, 0.7f, 3}), lo = F({}, {-1}), hi = F({}, {1}), yc = Z({5}),
      dyc = R({5}, 3), dxc = Z({5});
  run("Clip", {}, {xc.t, lo.t, hi.t}, {yc.t});
  run_planner("UnaryGrad", {{"op", std::string("Clip")}}, {dyc.t, xc.t, yc.t, lo.t}, {dxc.t});
  check_grad(fwd("Clip", {}, {xc.t, lo.t, hi.t}, {5}), xc, dyc.values(), dxc.values(), 1e-3);
  // As the training graph emits it for constant bounds: X in both slots, the bounds as
  // attributes. The gradient passes where lo <= x <= hi, the bounds themselves included
  // (torch.clamp's rule), and nowhere else: X == X everywhere must not let it through.
  Buf xb = F({6}, {-2, -1, -0.5f, 0.7f, 1, 3}), dyb = F({6}, {1, 2, 3, 4, 5, 6}), dxb = Z({6});
  run_planner("UnaryGrad", {{"op", std::string("Clip")}, {"min", -1.0}, {"max", 1.0}},
              {dyb.t, xb.t, xb.t}, {dxb.t});
  CHECK(dxb.values() == std::vector<float>{0, 2, 3, 4, 5, 0});
}

TEST_CASE("DivGradB and WhereGrad") {
  Buf a = R({2, 3}, 1), b = R({2, 3}, 2, 0.5, 2), y = Z({2, 3}), dy = R({2, 3}, 3), db = Z({2, 3});
  run("Div", {}, {a.t, b.t}, {y.t});
  run_planner("DivGradB", {}, {dy.t, y.t, b.t}, {db.t});
  check_grad(fwd("Div", {}, {a.t, b.t}, {2, 3}), b, dy.values(), db.values(), 1e-3);
  Buf c = Bools({2, 1}, {1, 0}), p = R({2, 3}, 4), q = R({2, 3}, 5), d1 = Z({2, 3}), d2 = Z({2, 3});
  run_planner("WhereGrad", {{"branch", int64_t{1}}}, {c.t, dy.t}, {d1.t});
  run_planner("WhereGrad", {{"branch", int64_t{2}}}, {c.t, dy.t}, {d2.t});
  check_grad(fwd("Where", {}, {c.t, p.t, q.t}, {2, 3}), p, dy.values(), d1.values(), 1e-3);
  check_grad(fwd("Where", {}, {c.t, p.t, q.t}, {2, 3}), q, dy.values(), d2.values(), 1e-3);
}

TEST_CASE("ReduceGrad for ReduceSum, ReduceMean, ReduceMax, ReduceMin (axes attribute)") {
  Buf x = R({2, 3, 4}, 7);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    INFO(op);
    const std::string o = op;
    const bool extremum = o == "ReduceMax" || o == "ReduceMin";
    struct Case {
      Attributes fwd;  // the forward op's attributes (axes as an attribute)
      Shape axes;      // ReduceGrad's normalised axes
      int64_t keepdims;
      Shape out;
    };
    const std::vector<Case> cases = {
        {{{"axes", Shape{-2}}, {"keepdims", int64_t{0}}}, {1}, 0, {2, 4}},
        {{{"axes", Shape{2, 0}}}, {0, 2}, 1, {1, 3, 1}},
        {{{"keepdims", int64_t{0}}}, {0, 1, 2}, 0, {}},  // no axes: every axis
        {{}, {0, 1, 2}, 1, {1, 1, 1}},
    };
    uint64_t seed = 8;
    for (const Case& c : cases) {
      INFO("axes " << planner::rt::shape_to_string(c.axes) << " keepdims " << c.keepdims);
      Buf y = Z(c.out), dy = R(c.out, seed++), dx = Z({2, 3, 4});
      run(op, c.fwd, {x.t}, {y.t});
      Attributes ga = {{"op", o}, {"axes", c.axes}, {"keepdims", c.keepdims}};
      std::vector<Tensor> ins = {dy.t, x.t};
      if (extremum) ins.push_back(y.t);
      run_planner("ReduceGrad", ga, ins, {dx.t});
      check_grad(fwd(op, c.fwd, {x.t}, c.out), x, dy.values(), dx.values(), 1e-3);
    }
  }
  // noop_with_empty_axes: the forward op reduced nothing, the normalised axes are empty.
  Buf same = Z({2, 3, 4}), dy = R({2, 3, 4}, 20), dx = Z({2, 3, 4});
  run_planner("ReduceGrad", {{"op", std::string("ReduceSum")}, {"axes", Shape{}}}, {dy.t, x.t},
              {dx.t});
  expect_close(dx.values(), dy.values(), 0, 0);
  // Ties split the gradient evenly.
  Buf t = F({1, 4}, {1, 3, 3, 2}), ty = F({1}, {3}), tdy = F({1}, {1}), tdx = Z({1, 4});
  run_planner("ReduceGrad",
              {{"op", std::string("ReduceMax")}, {"axes", Shape{1}}, {"keepdims", int64_t{0}}},
              {tdy.t, t.t, ty.t}, {tdx.t});
  expect_close(tdx.values(), {0, 0.5f, 0.5f, 0}, 0, 0);
  // The old contract (axes as an input, or not normalised) is refused, naming the node.
  Buf axes = I64({1}, {1}), dy2 = R({2, 4}, 21);
  CHECK_THROWS_WITH_AS(
      run_planner("ReduceGrad",
                  {{"op", std::string("ReduceSum")}, {"axes", Shape{1}}, {"keepdims", int64_t{0}}},
                  {dy2.t, x.t, axes.t}, {dx.t}),
      "node 'n' (ReduceGrad): op=ReduceSum takes 2 inputs (dY, X), got 3 (the axes are an "
      "attribute)",
      Error);
  CHECK_THROWS_WITH_AS(
      run_planner("ReduceGrad", {{"op", std::string("ReduceSum")}, {"keepdims", int64_t{0}}},
                  {dy2.t, x.t}, {dx.t}),
      doctest::Contains("attribute axes is missing"), Error);
  CHECK_THROWS_WITH_AS(
      run_planner("ReduceGrad",
                  {{"op", std::string("ReduceSum")}, {"axes", Shape{-2}}, {"keepdims", int64_t{0}}},
                  {dy2.t, x.t}, {dx.t}),
      doctest::Contains("is not a strictly increasing list of axes"), Error);
  CHECK_THROWS_WITH_AS(
      run_planner("ReduceGrad", {{"op", std::string("ReduceSum")}, {"axes", Shape{1}}},
                  {dy2.t, x.t}, {dx.t}),
      doctest::Contains("dY has shape [2,4], expected [2,1,4]"), Error);
}

TEST_CASE("GlobalPoolGrad and PoolGrad") {
  Buf x = R({2, 3, 4, 5}, 11);
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    INFO(op);
    Buf dy = R({2, 3, 1, 1}, 12), dx = Z({2, 3, 4, 5});
    run_planner("GlobalPoolGrad", {{"op", std::string(op)}}, {dy.t, x.t}, {dx.t});
    check_grad(fwd(op, {}, {x.t}, {2, 3, 1, 1}), x, dy.values(), dx.values(), 1e-3);
  }
  struct P {
    const char* op;
    Attributes a;
    Shape out;
  };
  std::vector<P> cases = {
      {"MaxPool",
       {{"kernel_shape", Shape{2, 3}}, {"strides", Shape{2, 1}}, {"pads", Shape{1, 1, 0, 1}}},
       {2, 3, 2, 5}},
      {"AveragePool",
       {{"kernel_shape", Shape{3, 3}}, {"strides", Shape{1, 2}}, {"pads", Shape{1, 1, 1, 1}}},
       {2, 3, 4, 3}},
      {"AveragePool",
       {{"kernel_shape", Shape{3, 3}},
        {"strides", Shape{1, 2}},
        {"pads", Shape{1, 1, 1, 1}},
        {"count_include_pad", int64_t{1}}},
       {2, 3, 4, 3}},
      {"MaxPool",
       {{"kernel_shape", Shape{2, 2}},
        {"strides", Shape{2, 2}},
        {"ceil_mode", int64_t{1}},
        {"dilations", Shape{1, 2}}},
       {2, 3, 2, 2}},
  };
  for (const P& c : cases) {
    INFO(std::string(c.op));
    Buf y = Z(c.out), dy = R(c.out, 13), dx = Z({2, 3, 4, 5});
    run(c.op, c.a, {x.t}, {y.t});
    Attributes ga = c.a;
    ga["op"] = std::string(c.op);
    run_planner("PoolGrad", ga, {dy.t, x.t, y.t}, {dx.t});
    check_grad(fwd(c.op, c.a, {x.t}, c.out), x, dy.values(), dx.values(), 1e-3);
  }
}

TEST_CASE("SoftmaxGrad for Softmax and LogSoftmax") {
  Buf x = R({2, 3, 4}, 21);
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t axis : {int64_t{1}, int64_t{-1}}) {
      INFO(op << " axis " << axis);
      Attributes a = {{"axis", axis}};
      Buf y = Z({2, 3, 4}), dy = R({2, 3, 4}, 22), dx = Z({2, 3, 4});
      run(op, a, {x.t}, {y.t});
      Attributes ga = a;
      ga["op"] = std::string(op);
      run_planner("SoftmaxGrad", ga, {dy.t, y.t}, {dx.t});
      check_grad(fwd(op, a, {x.t}, {2, 3, 4}), x, dy.values(), dx.values(), 1e-3);
    }
}

TEST_CASE("LayerNormGrad (dX) and LayerNormParamGrad (dScale, dB)") {
  for (int64_t axis : {int64_t{1}, int64_t{-1}}) {
    INFO("axis " << axis);
    const Shape ps = axis == 1 ? Shape{2, 4} : Shape{4};
    Buf x = R({3, 2, 4}, 31), s = R(ps, 32), b = R(ps, 33), dy = R({3, 2, 4}, 34);
    Attributes a = {{"axis", axis}, {"epsilon", 1e-5}};
    Buf dx = Z({3, 2, 4}), ds = Z(ps), dbias = Z(ps);
    run_planner("LayerNormGrad", a, {dy.t, x.t, s.t}, {dx.t});
    run_planner("LayerNormParamGrad", a, {dy.t, x.t}, {ds.t, dbias.t});
    auto f = fwd("LayerNormalization", a, {x.t, s.t, b.t}, {3, 2, 4});
    check_grad(f, x, dy.values(), dx.values(), 1e-3, 5e-3, 3e-2);
    check_grad(f, s, dy.values(), ds.values(), 1e-3);
    check_grad(f, b, dy.values(), dbias.values(), 1e-3);
    // Either output alone gives the same values.
    Buf only_s = Z(ps), only_b = Z(ps);
    run_planner("LayerNormParamGrad", a, {dy.t, x.t}, {only_s.t});
    run_planner("LayerNormParamGrad", a, {dy.t, x.t}, {Tensor{}, only_b.t});
    expect_close(only_s.values(), ds.values(), 0, 0);
    expect_close(only_b.values(), dbias.values(), 0, 0);
  }
  Buf x = R({3, 4}, 35), dy = R({3, 4}, 36);
  CHECK_THROWS_WITH_AS(run_planner("LayerNormParamGrad", {}, {dy.t, x.t}, {Z({3}).t}),
                       "node 'n' (LayerNormParamGrad): dScale has shape [3], expected [4]", Error);
  CHECK_THROWS_WITH_AS(
      run_planner("LayerNormGrad", {}, {dy.t, x.t, R({4}, 37).t}, {Z({3, 4}).t, Z({4}).t}),
      "node 'n' (LayerNormGrad): got 3 inputs and 2 outputs, expected (dY, X, "
      "Scale) -> dX",
      Error);
}

TEST_CASE("BatchNormGrad (dX) and BatchNormParamGrad (dScale, dB), inference form") {
  Buf x = R({2, 3, 2, 2}, 41), s = R({3}, 42), b = R({3}, 43), m = R({3}, 44),
      v = R({3}, 45, 0.5, 2), dy = R({2, 3, 2, 2}, 46);
  Attributes a = {{"epsilon", 1e-3}};
  Buf dx = Z({2, 3, 2, 2}), ds = Z({3}), dbias = Z({3});
  run_planner("BatchNormGrad", a, {dy.t, s.t, v.t}, {dx.t});
  run_planner("BatchNormParamGrad", a, {dy.t, x.t, m.t, v.t}, {ds.t, dbias.t});
  auto f = fwd("BatchNormalization", a, {x.t, s.t, b.t, m.t, v.t}, {2, 3, 2, 2});
  check_grad(f, x, dy.values(), dx.values(), 1e-3);
  check_grad(f, s, dy.values(), ds.values(), 1e-3);
  check_grad(f, b, dy.values(), dbias.values(), 1e-3);
  Buf only_b = Z({3});
  run_planner("BatchNormParamGrad", a, {dy.t, x.t, m.t, v.t}, {Tensor{}, only_b.t});
  expect_close(only_b.values(), dbias.values(), 0, 0);
  // rank 2 (BatchNormalization after a Flatten): no spatial axes
  Buf x2 = R({4, 3}, 47), dy2 = R({4, 3}, 48), dx2 = Z({4, 3}), ds2 = Z({3});
  run_planner("BatchNormGrad", a, {dy2.t, s.t, v.t}, {dx2.t});
  run_planner("BatchNormParamGrad", a, {dy2.t, x2.t, m.t, v.t}, {ds2.t});
  auto f2 = fwd("BatchNormalization", a, {x2.t, s.t, b.t, m.t, v.t}, {4, 3});
  check_grad(f2, x2, dy2.values(), dx2.values(), 1e-3);
  check_grad(f2, s, dy2.values(), ds2.values(), 1e-3);
  CHECK_THROWS_WITH_AS(
      run_planner("BatchNormGrad", a, {dy.t, x.t, s.t, m.t, v.t}, {dx.t}),
      doctest::Contains("got 5 inputs and 1 outputs, expected (dY, scale, var) -> dX"), Error);
}

TEST_CASE("LossGrad: the gradient of 0.5*sum(y^2) is y") {
  Buf y = R({2, 3}, 71), dy = R({2, 3}, 72);
  run_planner("LossGrad", {}, {y.t}, {dy.t});
  expect_close(dy.values(), y.values(), 0, 0);
  // against central differences of the loss itself
  auto loss_terms = [&] {
    std::vector<float> v = y.values();
    for (float& e : v) e = 0.5f * e * e;
    return v;
  };
  check_grad(loss_terms, y, std::vector<float>(6, 1.0f), dy.values(), 1e-2, 1e-4, 1e-4);
  CHECK_THROWS_WITH_AS(run_planner("LossGrad", {}, {y.t}, {Z({3, 2}).t}),
                       doctest::Contains("output 0 has shape [3,2], expected [2,3]"), Error);
  CHECK_THROWS_WITH_AS(run_planner("LossGrad", {}, {I64({1}, {1}).t}, {Z({1}).t}),
                       doctest::Contains("expected f32, f16 or bf16"), Error);
}

TEST_CASE("ConvGradData and ConvGradFilter") {
  struct C {
    Shape x, w, y;
    Attributes a;
  };
  std::vector<C> cases = {
      {{2, 4, 6, 5},
       {6, 2, 3, 2},
       {2, 6, 3, 4},
       {{"group", int64_t{2}},
        {"strides", Shape{2, 1}},
        {"pads", Shape{1, 0, 1, 1}},
        {"dilations", Shape{1, 2}}}},
      {{1, 3, 5, 5},
       {3, 1, 3, 3},
       {1, 3, 5, 5},
       {{"group", int64_t{3}}, {"pads", Shape{1, 1, 1, 1}}}},
      {{2, 2, 7}, {3, 2, 3}, {2, 3, 3}, {{"strides", Shape{2}}}},
      {{1, 1, 5, 5},
       {2, 1, 3, 3},
       {1, 2, 3, 3},
       {{"auto_pad", std::string("SAME_LOWER")}, {"strides", Shape{2, 2}}}},
  };
  uint64_t seed = 50;
  for (const C& c : cases) {
    Buf x = R(c.x, seed++), w = R(c.w, seed++), dy = R(c.y, seed++);
    Buf dx = Z(c.x), dw = Z(c.w);
    run_planner("ConvGradData", c.a, {dy.t, w.t}, {dx.t});
    run_planner("ConvGradFilter", c.a, {x.t, dy.t}, {dw.t});
    auto f = fwd("Conv", c.a, {x.t, w.t}, c.y);
    check_grad(f, x, dy.values(), dx.values(), 1e-2, 2e-3, 1e-2);
    check_grad(f, w, dy.values(), dw.values(), 1e-2, 2e-3, 1e-2);
  }
}

TEST_CASE("SliceGrad, PadGrad, GatherGrad, ZerosLike") {
  Buf x = R({3, 5}, 61);
  Buf st = I64({2}, {-1, 4}), en = I64({2}, {-100, 0}), ax = I64({2}, {0, 1}),
      sp = I64({2}, {-2, -3});
  Buf dy = R({2, 2}, 62), dx = Z({3, 5});
  run_planner("SliceGrad", {{"op", std::string("Slice")}}, {dy.t, st.t, en.t, ax.t, sp.t}, {dx.t});
  check_grad(fwd("Slice", {}, {x.t, st.t, en.t, ax.t, sp.t}, {2, 2}), x, dy.values(), dx.values(),
             1e-3);
  for (const char* mode : {"constant", "reflect", "edge"}) {
    INFO(mode);
    Buf pads = I64({4}, {1, 2, 2, -1});
    Attributes a = {{"mode", std::string(mode)}};
    Buf dyp = R({6, 6}, 63), dxp = Z({3, 5});
    Attributes ga = a;
    ga["op"] = std::string("Pad");
    run_planner("PadGrad", ga, {dyp.t, pads.t}, {dxp.t});
    check_grad(fwd("Pad", a, {x.t, pads.t}, {6, 6}), x, dyp.values(), dxp.values(), 1e-3);
  }
  Buf ind = I64({2, 2}, {4, -1, 0, 4});
  Buf dyg = R({3, 2, 2}, 64), dxg = Z({3, 5});
  run_planner("GatherGrad", {{"axis", int64_t{1}}}, {dyg.t, ind.t}, {dxg.t});
  check_grad(fwd("Gather", {{"axis", int64_t{1}}}, {x.t, ind.t}, {3, 2, 2}), x, dyg.values(),
             dxg.values(), 1e-3);
  Buf zl = R({3, 5}, 65);
  run_planner("ZerosLike", {}, {x.t}, {zl.t});
  CHECK(std::all_of(zl.f(), zl.f() + 15, [](float v) { return v == 0; }));
}

TEST_CASE("SGD, Momentum, Adam") {
  Buf p = F({2}, {1, -1}), g = F({2}, {0.5f, -2}), po = Z({2});
  run_planner("SGD", {{"lr", 0.1}}, {p.t, g.t}, {po.t});
  expect_close(po.values(), {0.95f, -0.8f}, 1e-7, 1e-6);
  Buf v = F({2}, {1, 1}), vo = Z({2});
  run_planner("Momentum", {{"lr", 0.1}, {"momentum", 0.5}}, {p.t, g.t, v.t}, {po.t, vo.t});
  expect_close(vo.values(), {1.0f, -1.5f}, 1e-7, 1e-6);
  expect_close(po.values(), {0.9f, -0.85f}, 1e-7, 1e-6);
  Buf m = F({2}, {0, 0}), s = F({2}, {0, 0}), mo = Z({2}), so = Z({2});
  run_planner("Adam", {{"lr", 0.01}}, {p.t, g.t, m.t, s.t}, {po.t, mo.t, so.t});
  // First step: the bias-corrected update is lr * sign(g) (up to epsilon).
  expect_close(po.values(), {0.99f, -0.99f}, 1e-6, 1e-6);
  expect_close(mo.values(), {0.05f, -0.2f}, 1e-7, 1e-6);
  expect_close(so.values(), {0.00025f, 0.004f}, 1e-9, 1e-5);
  run_planner("Adam", {{"lr", 0.01}, {"step", int64_t{3}}}, {p.t, g.t, mo.t, so.t},
              {po.t, mo.t, so.t});
  const double m2 = 0.9 * 0.05 + 0.1 * 0.5, v2 = 0.999 * 0.00025 + 0.001 * 0.25;
  CHECK(po.f()[0] == doctest::Approx(1 - 0.01 * (m2 / (1 - 0.729)) /
                                             (std::sqrt(v2 / (1 - std::pow(0.999, 3))) + 1e-8))
                         .epsilon(1e-5));
  CHECK_THROWS_WITH_AS(run_planner("SGD", {}, {p.t, Z({3}).t}, {po.t}),
                       doctest::Contains("input 1 has shape [3]"), Error);
}

TEST_CASE("SGD, Momentum, Adam: grad_scale unscales a loss-scaled gradient first") {
  // A gradient scaled by 1024 and grad_scale 1/1024 step exactly as the unscaled gradient.
  Buf p = F({2}, {1, -1}), g = F({2}, {0.5f, -2}), gs = F({2}, {512.0f, -2048.0f});
  for (const char* op : {"SGD", "Momentum", "Adam"}) {
    const bool sgd = std::string(op) == "SGD", adam = std::string(op) == "Adam";
    Buf po = Z({2}), qo = Z({2}), s1 = Z({2}), s2 = Z({2}), t1 = Z({2}), t2 = Z({2});
    Buf m = F({2}, {0.1f, 0.2f}), v = F({2}, {0.01f, 0.02f});
    std::vector<Tensor> plain = {p.t, g.t}, scaled = {p.t, gs.t};
    std::vector<Tensor> out1 = {po.t}, out2 = {qo.t};
    if (!sgd) {
      plain.push_back(m.t);
      scaled.push_back(m.t);
      out1.push_back(s1.t);
      out2.push_back(s2.t);
    }
    if (adam) {
      plain.push_back(v.t);
      scaled.push_back(v.t);
      out1.push_back(t1.t);
      out2.push_back(t2.t);
    }
    run_planner(op, {{"lr", 0.1}}, plain, out1);
    run_planner(op, {{"lr", 0.1}, {"grad_scale", 1.0 / 1024}}, scaled, out2);
    CAPTURE(op);
    expect_close(qo.values(), po.values(), 0, 0);
    if (!sgd) expect_close(s2.values(), s1.values(), 0, 0);
    if (adam) expect_close(t2.values(), t1.values(), 0, 0);
  }
}

TEST_CASE("LossGrad: scale, the mean loss's 1/numel") {
  Buf y = R({2, 3}, 73), dy = Z({2, 3});
  run_planner("LossGrad", {{"scale", 1.0 / 6}}, {y.t}, {dy.t});
  std::vector<float> expect = y.values();
  for (float& e : expect) e *= 1.0f / 6;
  expect_close(dy.values(), expect, 0, 0);
}
