// Resize in nearest, linear and cubic modes and its input gradient (ai.planner.ResizeGrad):
// resize_math.h's bodies per element (the cuda kernels run the same). Nearest upsampling by whole
// factors is imported as Reshape, Expand and Reshape (importers/lower_ops.h) and never reaches this
// kernel.
#include <cmath>
#include <string>

#include "resize_math.h"
#include "shape_ops.h"

namespace planner::rt::kernels {

namespace {

int32_t one_of(const KernelContext& ctx, const std::string& attr, const std::string& fallback,
               std::initializer_list<const char*> names) {
  const std::string v = ctx.attr_string(attr, fallback);
  int32_t i = 0;
  for (const char* n : names) {
    if (v == n) return i;
    ++i;
  }
  ctx.fail(attr + " '" + v + "' is not run");
}

// Resize's parameters for an input of shape `xs` (the forward's input; the gradient's output)
// from the node's attributes and its scales (input 2) or sizes (input 3).
ResizeParams params_for(const KernelContext& ctx, const Shape& xs) {
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 1 || rank > kResizeMaxRank)
    ctx.fail("needs an input of rank 1 to " + std::to_string(kResizeMaxRank));
  if (ctx.inputs.size() < 3)
    ctx.fail(
        "needs the opset-11 inputs (X, roi, scales, sizes): opset 10's (X, scales) is not run");
  ResizeParams p;
  p.rank = static_cast<int32_t>(rank);
  p.mode = one_of(ctx, "mode", "nearest", {"nearest", "linear", "cubic"});
  p.coord = one_of(
      ctx, "coordinate_transformation_mode", "half_pixel",
      {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"});
  p.rounding = one_of(ctx, "nearest_mode", "round_prefer_floor",
                      {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  p.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  p.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75);
  if (ctx.attr_int("antialias", 0) != 0) ctx.fail("antialias is not run");
  if (ctx.has_attr("axes")) ctx.fail("the axes attribute is not run (opset 18 is imported as 17)");
  const bool scaled = ctx.has_in(2) && ctx.in(2).numel() > 0;
  if (scaled) {
    const Tensor& s = ctx.in(2);
    if (s.dtype != DType::kFloat32) ctx.fail("scales must be f32");
    if (s.numel() != rank) ctx.fail("scales must hold one value per axis");
  } else if (!ctx.has_in(3)) {
    ctx.fail("needs scales or sizes");
  }
  const std::vector<int64_t> sizes =
      scaled ? std::vector<int64_t>{} : ctx.ints_of(ctx.in(3), "sizes");
  if (!scaled && static_cast<int64_t>(sizes.size()) != rank)
    ctx.fail("sizes must hold one value per axis");
  p.numel_out = 1;
  for (int d = 0; d < p.rank; ++d) {
    const int64_t in = xs[static_cast<size_t>(d)];
    if (in <= 0) ctx.fail("cannot resize an empty axis");
    p.in[d] = in;
    if (scaled) {
      p.scale[d] = static_cast<double>(ctx.in(2).as<float>()[d]);
      if (!(p.scale[d] > 0)) ctx.fail("scales must be positive");
      p.out[d] = static_cast<int64_t>(std::floor(p.scale[d] * static_cast<double>(in)));
    } else {
      p.out[d] = sizes[static_cast<size_t>(d)];
      if (p.out[d] <= 0) ctx.fail("sizes must be positive");
      p.scale[d] = static_cast<double>(p.out[d]) / static_cast<double>(in);
    }
    p.numel_out *= p.out[d];
  }
  return p;
}

Shape out_shape(const ResizeParams& p) {
  return Shape(p.out, p.out + p.rank);
}

}  // namespace

ResizeParams resize_params(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.dtype != DType::kFloat32)
    ctx.fail("unsupported input type " + std::string(dtype_name(x.dtype)));
  const ResizeParams p = params_for(ctx, x.shape);
  ctx.expect_out(0, x.dtype, out_shape(p));
  return p;
}

ResizeParams resize_grad_params(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  if (!ctx.has_out(0)) ctx.fail("needs the output dX");
  const ResizeParams p = params_for(ctx, ctx.out(0).shape);
  if (dy.shape != out_shape(p))
    ctx.fail("dY's shape is not the forward Resize's output shape for dX's");
  ctx.expect_out(0, DType::kFloat32, ctx.out(0).shape);
  return p;
}

void k_resize(const KernelContext& ctx) {
  const ResizeParams p = resize_params(ctx);
  const float* x = ctx.in(0).as<float>();
  float* y = ctx.out(0).as<float>();
  for (int64_t e = 0; e < p.numel_out; ++e) y[e] = resize_at<float>(x, p, e);
}

void k_resize_grad(const KernelContext& ctx) {
  const ResizeParams p = resize_grad_params(ctx);
  const float* dy = ctx.in(0).as<float>();
  float* dx = ctx.out(0).as<float>();
  const int64_t n = ctx.out(0).numel();
  for (int64_t i = 0; i < n; ++i) dx[i] = resize_grad_at<float>(dy, p, i);
}

}  // namespace planner::rt::kernels
