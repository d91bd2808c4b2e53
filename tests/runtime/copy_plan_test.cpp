// The copy plans of the data-movement kernels (runtime_stub/src/copy_plan.h) run on the host
// with the index arithmetic the cuda kernels use, against references written here from the
// operators' definitions (element by element, multi-index arithmetic), and against the cpu
// kernels where those keep their own loops (Concat, Split).
#include <doctest/doctest.h>

#include <numeric>

#include "../../runtime_stub/src/copy_plan.h"
#include "../../runtime_stub/src/shape_ops.h"
#include "planner_rt/cuda_host_ops.h"
#include "rt_test_util.h"

using namespace rt_test;
namespace k = planner::rt::kernels;

namespace {

std::vector<float> iota_values(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 1.0f);
  return v;
}

// Row-major multi-index of flat index i in `shape`.
std::vector<int64_t> unflat(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t flat(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

std::vector<float> run(const k::CopyPlan& plan, const std::vector<const std::vector<float>*>& xs,
                       int64_t out_n, float fill = 0) {
  std::vector<float> y(static_cast<size_t>(out_n), -7.0f);
  std::vector<const void*> in;
  for (auto* x : xs) in.push_back(x->data());
  k::run_copy_plan_on_host(plan, in, {y.data()}, {out_n}, sizeof(float), &fill);
  return y;
}

}  // namespace

TEST_CASE("slice plans: positive and negative steps, clamped ends, every axis") {
  const Shape x{3, 4, 5};
  const std::vector<float> xv = iota_values(60);
  k::SliceRegion r;
  r.start = {2, 0, 4};
  r.step = {-1, 2, -2};
  r.extent = {3, 2, 3};  // axis 0: 2,1,0; axis 1: 0,2; axis 2: 4,2,0
  k::CopyPlan plan;
  REQUIRE(k::slice_plan(x, r, &plan));
  const std::vector<float> y = run(plan, {&xv}, 18);
  for (int64_t i = 0; i < 18; ++i) {
    std::vector<int64_t> o = unflat(i, r.extent), src(3);
    for (size_t d = 0; d < 3; ++d) src[d] = r.start[d] + o[d] * r.step[d];
    CHECK(y[static_cast<size_t>(i)] == xv[static_cast<size_t>(flat(src, x))]);
  }
  // The gradient puts each element back and zeroes the rest.
  k::CopyPlan back;
  REQUIRE(k::slice_grad_plan(x, r, &back));
  const std::vector<float> dx = run(back, {&y}, 60);
  for (int64_t i = 0; i < 60; ++i) {
    std::vector<int64_t> at = unflat(i, x);
    bool hit = true;
    for (size_t d = 0; d < 3; ++d) {
      const int64_t off = at[d] - r.start[d];
      hit = hit && off % r.step[d] == 0 && off / r.step[d] >= 0 && off / r.step[d] < r.extent[d];
    }
    CHECK(dx[static_cast<size_t>(i)] == (hit ? xv[static_cast<size_t>(i)] : 0.0f));
  }
}

TEST_CASE("pad plans: constant mode with growing and cropping pads, and the gradient") {
  const Shape x{2, 3, 4};
  const std::vector<float> xv = iota_values(24);
  k::PadSpec p;
  p.begin = {1, -1, 2};
  p.end = {0, 1, -1};
  p.out = {3, 3, 5};
  k::CopyPlan plan;
  REQUIRE(k::pad_plan(x, p, &plan));
  const std::vector<float> y = run(plan, {&xv}, 45, 9.5f);
  for (int64_t i = 0; i < 45; ++i) {
    std::vector<int64_t> o = unflat(i, p.out), src(3);
    bool inside = true;
    for (size_t d = 0; d < 3; ++d) {
      src[d] = o[d] - p.begin[d];
      inside = inside && src[d] >= 0 && src[d] < x[d];
    }
    CHECK(y[static_cast<size_t>(i)] == (inside ? xv[static_cast<size_t>(flat(src, x))] : 9.5f));
  }
  k::CopyPlan back;
  REQUIRE(k::pad_grad_plan(x, p, &back));
  const std::vector<float> dx = run(back, {&y}, 24);
  for (int64_t i = 0; i < 24; ++i) {
    std::vector<int64_t> at = unflat(i, x), o(3);
    bool kept = true;
    for (size_t d = 0; d < 3; ++d) {
      o[d] = at[d] + p.begin[d];
      kept = kept && o[d] >= 0 && o[d] < p.out[d];
    }
    CHECK(dx[static_cast<size_t>(i)] == (kept ? xv[static_cast<size_t>(i)] : 0.0f));
  }
  p.mode = k::PadMode::kReflect;
  CHECK_FALSE(k::pad_plan(x, p, &plan));  // other modes keep their own loops
}

namespace {

// The source index of padded position o along an axis of extent n, from ONNX's definitions
// (reflect mirrors without repeating the edge; pads smaller than n).
int64_t ref_pad_source(const std::string& mode, int64_t o, int64_t begin, int64_t n) {
  const int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  if (mode == "wrap") return i < 0 ? i + n : i - n;
  return i < 0 ? -i : 2 * (n - 1) - i;  // reflect
}

}  // namespace

TEST_CASE("pad in reflect, edge and wrap: the device's gather and gradient bodies") {
  struct Case {
    Shape x;
    std::vector<int64_t> pads;
  };
  const std::vector<Case> cases = {{{5}, {2, 3}},
                                   {{3, 4}, {1, 2, 2, 1}},
                                   {{2, 3, 4}, {0, 1, 2, 1, 0, 3}},
                                   {{1, 3, 5}, {0, -1, 2, 0, 1, 1}}};
  for (const char* mode : {"reflect", "edge", "wrap"})
    for (const Case& c : cases) {
      CAPTURE(mode);
      CAPTURE(c.x.size());
      Attributes attrs = {{"mode", std::string(mode)}, {"pads", c.pads}};
      Buf x = F(c.x, iota_values(planner::rt::num_elements(c.x)));
      std::vector<Tensor> ins = {x.t};
      std::vector<Tensor> none;
      k::KernelContext ctx{"Pad", "p", attrs, ins, none};
      const k::PadSpec spec = k::pad_spec(ctx, c.x, nullptr, nullptr);
      const k::PadGeom g = k::pad_geom(ctx, spec, c.x);
      Buf y = Z(spec.out);
      rt_test::run("Pad", attrs, {x.t}, {y.t});
      // The gather body reads what the definition says, and what the cpu kernel wrote.
      for (int64_t o = 0; o < y.n(); ++o) {
        const std::vector<int64_t> idx = unflat(o, spec.out);
        std::vector<int64_t> src(c.x.size());
        for (size_t d = 0; d < c.x.size(); ++d)
          src[d] = ref_pad_source(mode, idx[d], spec.begin[d], c.x[d]);
        const int64_t off = k::pad_read_offset(g, o);
        REQUIRE(off == flat(src, c.x));
        CHECK(y.f()[o] == x.f()[off]);
      }
      // The gradient body gathers what the cpu kernel scatters, bit for bit.
      Buf dy = R(spec.out, 3);
      Buf dx = Z(c.x);
      rt_test::run_planner("PadGrad", attrs, {dy.t}, {dx.t});
      for (int64_t i = 0; i < dx.n(); ++i) CHECK(k::pad_grad_element(g, dy.f(), i) == dx.f()[i]);
    }
}

TEST_CASE("expand and tile plans against their definitions") {
  const Shape x{3, 1, 2};
  const std::vector<float> xv = iota_values(6);
  const Shape out{2, 3, 4, 2};
  k::CopyPlan plan;
  REQUIRE(k::expand_plan(x, out, &plan));
  std::vector<float> y = run(plan, {&xv}, 48);
  for (int64_t i = 0; i < 48; ++i) {
    std::vector<int64_t> o = unflat(i, out);
    CHECK(y[static_cast<size_t>(i)] == xv[static_cast<size_t>(o[1] * 2 + o[3])]);
  }
  const std::vector<int64_t> reps{2, 3, 1};
  const Shape tiled{6, 3, 2};
  REQUIRE(k::tile_plan(x, reps, &plan));
  y = run(plan, {&xv}, 36);
  for (int64_t i = 0; i < 36; ++i) {
    std::vector<int64_t> o = unflat(i, tiled), src(3);
    for (size_t d = 0; d < 3; ++d) src[d] = o[d] % x[d];
    CHECK(y[static_cast<size_t>(i)] == xv[static_cast<size_t>(flat(src, x))]);
  }
  // Beyond the device's dimensions a plan is refused, and the kernel runs its own loop.
  CHECK_FALSE(k::tile_plan(Shape{1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, &plan));
}

TEST_CASE("concat and split plans equal the cpu kernels") {
  Buf a = F({2, 1, 3}, iota_values(6)), b = F({2, 3, 3}, iota_values(18));
  Buf y(DType::kFloat32, {2, 4, 3});
  Tensor in[] = {a.t, b.t};
  Tensor out[] = {y.t};
  planner::rt::run_cpu_kernel("", "Concat", {{"axis", int64_t{1}}}, in, out);
  k::CopyPlan plan;
  REQUIRE(k::concat_plan({a.t.shape, b.t.shape}, 1, &plan));
  std::vector<float> av = a.values(), bv = b.values();
  CHECK(run(plan, {&av, &bv}, 24) == y.values());

  Buf p0(DType::kFloat32, {2, 1, 3}), p1(DType::kFloat32, {2, 3, 3});
  Tensor whole[] = {y.t};
  Tensor parts[] = {p0.t, p1.t};
  Buf sizes = I64({2}, {1, 3});
  Tensor split_in[] = {y.t, sizes.t};
  planner::rt::run_cpu_kernel("", "Split", {{"axis", int64_t{1}}}, split_in, parts);
  REQUIRE(k::split_plan(y.t.shape, 1, {1, 3}, &plan));
  std::vector<float> q0(6), q1(18), yv = y.values();
  k::run_copy_plan_on_host(plan, {yv.data()}, {q0.data(), q1.data()}, {6, 18}, sizeof(float));
  CHECK(q0 == p0.values());
  CHECK(q1 == p1.values());
  (void)whole;
}

TEST_CASE("gather's device index arithmetic") {
  // data [2, 5, 3] gathered along axis 1 with 4 indices: output [2, 4, 3].
  const int64_t outer = 2, dim = 5, inner = 3, count = 4;
  const std::vector<int64_t> idx{4, -1, 0, 2};
  for (int64_t i = 0; i < outer * count * inner; ++i) {
    const int64_t o = i / (count * inner), kk = (i / inner) % count, j = i % inner;
    CHECK(k::gather_index_of(i, count, inner) == kk);
    const int64_t want = (o * dim + (idx[static_cast<size_t>(kk)] + dim) % dim) * inner + j;
    CHECK(k::gather_source(i, count, inner, dim, idx[static_cast<size_t>(kk)]) == want);
  }
  CHECK(k::gather_source(0, count, inner, dim, 5) == -1);
  CHECK(k::gather_source(0, count, inner, dim, -6) == -1);
}

TEST_CASE("the cuda host-op list is the kernel table's host column") {
  int host_rows = 0;
  for (const std::string& name : planner::rt::kernel_names()) {
    const size_t dot = name.rfind('.');
    std::string domain = name.substr(0, dot), op = name.substr(dot + 1);
    if (domain == "ai.onnx") domain.clear();
    const bool host = planner::rt::cuda_implementation(domain, op) == "host";
    CAPTURE(name);
    CHECK(host == planner::rt::cuda_runs_on_host(domain, op));
    host_rows += host ? 1 : 0;
  }
  CHECK(host_rows == static_cast<int>(std::size(planner::rt::kCudaHostOps)));
}
