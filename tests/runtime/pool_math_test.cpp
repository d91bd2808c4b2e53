// PoolGrad's device body (runtime_stub/src/pool_math.h), run on the host element by element,
// against the cpu kernel: bit-identical sums over strides, dilations, padding, ceil mode,
// ties and both AveragePool divisors, in one, two and three spatial dimensions.
#include <doctest/doctest.h>

#include <cstring>

#include "../../runtime_stub/src/shape_ops.h"
#include "rt_test_util.h"

using namespace rt_test;
namespace k = planner::rt::kernels;

namespace {

void check_case(const Shape& xs, const Attributes& attrs) {
  Buf x(DType::kFloat32, xs);
  planner::rt::fill_uniform(x.t, 7, "x", -1, 1);
  // Ties: every fourth value repeats its neighbour, so the first maximum must win.
  for (int64_t i = 3; i < x.n(); i += 4) x.f()[i] = x.f()[i - 1];
  const std::string op = std::get<std::string>(attrs.at("op"));
  // dY's shape from the geometry: with X standing in for dY the call may fail, but only after
  // filling the geometry in.
  Buf dx(DType::kFloat32, xs);
  int64_t planes = 0;
  k::PoolGeom g;
  Shape ys = {xs[0], xs[1]};
  {
    std::vector<Tensor> ins = {x.t, x.t};
    std::vector<Tensor> outs = {dx.t};
    k::KernelContext ctx{"PoolGrad", "t", attrs, ins, outs};
    try {
      k::pool_grad_geometry(ctx, &g, &planes);
    } catch (const planner::rt::Error&) {  // dY's shape differs from X's: expected
    }
    REQUIRE(g.nd > 0);
    for (int d = 0; d < g.nd; ++d) ys.push_back(g.out[d]);
  }
  Buf dy(DType::kFloat32, ys);
  planner::rt::fill_uniform(dy.t, 9, "dy", -1, 1);
  Tensor in[] = {dy.t, x.t};
  Tensor out[] = {dx.t};
  planner::rt::run_cpu_kernel("ai.planner", "PoolGrad", attrs, in, out);
  std::vector<Tensor> ins = {dy.t, x.t};
  std::vector<Tensor> outs = {dx.t};
  k::KernelContext ctx{"PoolGrad", "t", attrs, ins, outs};
  REQUIRE(k::pool_grad_geometry(ctx, &g, &planes));
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t i = 0; i < g.in_p; ++i) {
      float v = 0;
      REQUIRE(k::pool_grad_element(g, x.f() + pl * g.in_p, dy.f() + pl * g.out_p, i, &v));
      const float want = dx.f()[pl * g.in_p + i];
      CAPTURE(op);
      CAPTURE(i);
      CHECK(std::memcmp(&v, &want, sizeof v) == 0);
    }
}

}  // namespace

TEST_CASE("PoolGrad's device body equals the cpu kernel, bit for bit") {
  using V = std::vector<int64_t>;
  for (const char* op : {"MaxPool", "AveragePool"}) {
    check_case({2, 3, 9, 8}, {{"op", std::string(op)},
                              {"kernel_shape", V{3, 3}},
                              {"strides", V{2, 2}},
                              {"pads", V{1, 1, 1, 1}}});
    check_case({1, 2, 11}, {{"op", std::string(op)},
                            {"kernel_shape", V{4}},
                            {"strides", V{3}},
                            {"pads", V{2, 1}},
                            {"ceil_mode", int64_t{1}}});
    check_case({1, 2, 5, 6, 4},
               {{"op", std::string(op)}, {"kernel_shape", V{2, 3, 2}}, {"strides", V{1, 2, 1}}});
  }
  check_case({2, 2, 10, 10}, {{"op", std::string("MaxPool")},
                              {"kernel_shape", V{3, 3}},
                              {"dilations", V{2, 2}},
                              {"pads", V{2, 2, 2, 2}}});
  check_case({2, 2, 7, 7}, {{"op", std::string("AveragePool")},
                            {"kernel_shape", V{3, 3}},
                            {"strides", V{2, 2}},
                            {"pads", V{1, 1, 1, 1}},
                            {"count_include_pad", int64_t{1}}});
}
