// Resize (resize_math.h, the body both backends run) by hand: linear under half_pixel (PyTorch's
// bilinear with align_corners=False) and align_corners, nearest's rounding rules, cubic's
// weights (a = -0.75) at a half coordinate, exclude_outside's renormalised weights, two axes at
// once, and the modes it refuses.
#include "rt_test_util.h"

using namespace rt_test;

namespace {

// An empty roi or scales input (present, no values).
Buf none() {
  return Buf(DType::kFloat32, {0});
}

std::vector<float> resize(const Buf& x, Shape out, const Attributes& attrs, const Buf& scales,
                          const Buf* sizes = nullptr) {
  Buf y = Z(std::move(out));
  const Buf roi = none();
  std::vector<Tensor> ins = {x.t, roi.t, scales.t};
  if (sizes) ins.push_back(sizes->t);
  run("Resize", attrs, ins, {y.t});
  return y.values();
}

}  // namespace

TEST_CASE("Resize linear: half_pixel and align_corners") {
  const Buf x = F({4}, {1, 2, 3, 4});
  expect_close(resize(x, {8}, {{"mode", std::string("linear")}}, F({1}, {2})),
               {1, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4}, 1e-6, 0);
  const Buf sizes = I64({1}, {7});
  expect_close(resize(x, {7},
                      {{"mode", std::string("linear")},
                       {"coordinate_transformation_mode", std::string("align_corners")}},
                      none(), &sizes),
               {1, 1.5, 2, 2.5, 3, 3.5, 4}, 1e-6, 0);
  // Two axes: the rows of [[1, 2], [3, 4]] widened twice, the rows kept.
  const Buf m = F({2, 2}, {1, 2, 3, 4});
  expect_close(resize(m, {2, 4}, {{"mode", std::string("linear")}}, F({2}, {1, 2})),
               {1, 1.25, 1.75, 2, 3, 3.25, 3.75, 4}, 1e-6, 0);
}

TEST_CASE("Resize nearest: the rounding rules") {
  const Buf x = F({4}, {1, 2, 3, 4});
  expect_close(resize(x, {8},
                      {{"coordinate_transformation_mode", std::string("asymmetric")},
                       {"nearest_mode", std::string("floor")}},
                      F({1}, {2})),
               {1, 1, 2, 2, 3, 3, 4, 4}, 0, 0);
  // Halving under half_pixel lands on x.5: round_prefer_floor takes the left, _ceil the right.
  expect_close(resize(x, {2}, {}, F({1}, {0.5f})), {1, 3}, 0, 0);
  expect_close(resize(x, {2}, {{"nearest_mode", std::string("round_prefer_ceil")}}, F({1}, {0.5f})),
               {2, 4}, 0, 0);
}

TEST_CASE("Resize cubic: Keys' weights at a half coordinate, exclude_outside") {
  // Asymmetric x2: output 3 reads coordinate 1.5, taps 0..3 weighted -0.09375, 0.59375,
  // 0.59375, -0.09375 (a = -0.75).
  const Buf x = F({4}, {0, 0, 1, 0});
  const auto y = resize(x, {8},
                        {{"mode", std::string("cubic")},
                         {"coordinate_transformation_mode", std::string("asymmetric")}},
                        F({1}, {2}));
  CHECK(y[3] == doctest::Approx(0.59375).epsilon(1e-7));
  CHECK(y[2] == 0);  // coordinate 1: the input itself
  CHECK(y[4] == 1);
  // A constant stays constant however the weights are cut and renormalised.
  const Buf c = F({5}, {5, 5, 5, 5, 5});
  for (int64_t exclude : {int64_t{0}, int64_t{1}})
    expect_close(resize(c, {12}, {{"mode", std::string("cubic")}, {"exclude_outside", exclude}},
                        F({1}, {2.5f})),
                 std::vector<float>(12, 5.0f), 1e-6, 0);
}

TEST_CASE("Resize: what it refuses") {
  const Buf x = F({4}, {1, 2, 3, 4});
  Buf y = Z({8});
  CHECK_THROWS_WITH_AS(
      run("Resize", {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}},
          {x.t, none().t, F({1}, {2}).t}, {y.t}),
      doctest::Contains("tf_crop_and_resize"), planner::rt::Error);
  CHECK_THROWS_WITH_AS(
      run("Resize", {{"antialias", int64_t{1}}}, {x.t, none().t, F({1}, {2}).t}, {y.t}),
      doctest::Contains("antialias"), planner::rt::Error);
  Buf wrong = Z({7});
  CHECK_THROWS_WITH_AS(run("Resize", {}, {x.t, none().t, F({1}, {2}).t}, {wrong.t}),
                       doctest::Contains("[8]"), planner::rt::Error);
  CHECK_THROWS_WITH_AS(run("Resize", {}, {x.t, F({1}, {2}).t}, {y.t}),
                       doctest::Contains("opset 10"), planner::rt::Error);
}

// Resize is linear in its input: its gradient (ai.planner.ResizeGrad, gathered per input
// element) must equal the central differences of sum(Resize(x) * w), for every mode and
// coordinate rule, upsampling by sizes and downsampling by scales, the edges included.
TEST_CASE("ResizeGrad: the transpose of Resize, every mode and coordinate rule") {
  const Buf x = R({2, 3, 5}, 11);
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"})
      for (int64_t exclude : {int64_t{0}, int64_t{1}})
        for (bool up : {true, false}) {
          CAPTURE(mode);
          CAPTURE(coord);
          CAPTURE(exclude);
          CAPTURE(up);
          const Attributes attrs = {{"mode", std::string(mode)},
                                    {"coordinate_transformation_mode", std::string(coord)},
                                    {"exclude_outside", exclude}};
          const Shape out = up ? Shape{2, 3, 12} : Shape{2, 3, 3};
          const Buf scales = up ? none() : F({3}, {1, 1, 0.6f});
          const Buf sizes = I64({3}, {2, 3, up ? 12 : 3});
          auto forward = [&] {
            Buf y = Z(out);
            run("Resize", attrs, {x.t, none().t, scales.t, sizes.t}, {y.t});
            return y.values();
          };
          const Buf w = R(out, 5);
          Buf dx = Z({2, 3, 5});
          run_planner("ResizeGrad", attrs, {w.t, none().t, scales.t, sizes.t}, {dx.t});
          check_grad(forward, x, w.values(), dx.values(), 1e-2, 1e-4, 1e-4);
        }
}
