// BatchNormalization (inference form), LayerNormalization, Softmax/LogSoftmax, and their
// gradients BatchNormGrad, LayerNormGrad, SoftmaxGrad.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_util.h"

namespace planner::rt::kernels {

namespace {

// X viewed as [outer, axis extent, inner] around one axis.
struct AxisView {
  int64_t outer = 1, extent = 1, inner = 1;
};

AxisView axis_view(const Shape& s, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < axis; ++i) v.outer *= s[static_cast<size_t>(i)];
  v.extent = s[static_cast<size_t>(axis)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) v.inner *= s[i];
  return v;
}

// BatchNormalization's per-channel inputs: checks scale, bias/mean, var are [C].
void check_channel(const KernelContext& ctx, const Tensor& t, int64_t c, const char* what) {
  ctx.expect_dtype(t, DType::kFloat32, what);
  if (t.shape != Shape{c})
    ctx.fail(std::string(what) + " has shape " + shape_to_string(t.shape) + ", expected [" +
             std::to_string(c) + "]");
}

}  // namespace

void k_batch_norm(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (x.rank() < 2) ctx.fail("X must have rank >= 2");
  if (ctx.attr_int("training_mode", 0) != 0 || ctx.has_out(1))
    ctx.fail("training mode is not supported (the inference form is differentiated)");
  const int64_t c = x.shape[1];
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i <= 4; ++i) check_channel(ctx, ctx.in(i), c, names[i - 1]);
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const float *sc = ctx.in(1).as<float>(), *b = ctx.in(2).as<float>(),
              *mean = ctx.in(3).as<float>(), *var = ctx.in(4).as<float>();
  AxisView v = axis_view(x.shape, 1);
  const float* xp = x.as<float>();
  float* yp = ctx.out(0).as<float>();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float a = static_cast<float>(sc[ch] / std::sqrt(static_cast<double>(var[ch]) + eps));
      const float shift = b[ch] - a * mean[ch];
      const int64_t base = (o * c + ch) * v.inner;
      for (int64_t i = 0; i < v.inner; ++i) yp[base + i] = a * xp[base + i] + shift;
    }
}

void k_batch_norm_grad(const KernelContext& ctx) {
  // Inputs (dY, X, scale, mean, var); outputs (dX, dScale, dBias), each optional.
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (x.rank() < 2 || dy.shape != x.shape)
    ctx.fail("dY and X must have the same shape of rank >= 2");
  const int64_t c = x.shape[1];
  check_channel(ctx, ctx.in(2), c, "scale");
  check_channel(ctx, ctx.in(3), c, "mean");
  check_channel(ctx, ctx.in(4), c, "var");
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const float *sc = ctx.in(2).as<float>(), *mean = ctx.in(3).as<float>(),
              *var = ctx.in(4).as<float>();
  AxisView v = axis_view(x.shape, 1);
  const float* xp = x.as<float>();
  const float* dyp = dy.as<float>();
  float* dx = nullptr;
  if (ctx.has_out(0)) ctx.expect_out(0, DType::kFloat32, x.shape), dx = ctx.out(0).as<float>();
  std::vector<double> dscale(static_cast<size_t>(c), 0.0), dbias(static_cast<size_t>(c), 0.0);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double rstd = 1.0 / std::sqrt(static_cast<double>(var[ch]) + eps);
      const int64_t base = (o * c + ch) * v.inner;
      for (int64_t i = 0; i < v.inner; ++i) {
        const double g = dyp[base + i];
        dscale[static_cast<size_t>(ch)] += g * (xp[base + i] - mean[ch]) * rstd;
        dbias[static_cast<size_t>(ch)] += g;
        if (dx) dx[base + i] = static_cast<float>(g * sc[ch] * rstd);
      }
    }
  for (size_t k = 1; k <= 2; ++k) {
    if (!ctx.has_out(k)) continue;
    ctx.expect_out(k, DType::kFloat32, {c});
    float* o = ctx.out(k).as<float>();
    const auto& src = k == 1 ? dscale : dbias;
    for (int64_t ch = 0; ch < c; ++ch) o[ch] = static_cast<float>(src[static_cast<size_t>(ch)]);
  }
}

namespace {

struct LayerNormShapes {
  int64_t axis, outer, inner;  // X viewed as [outer, inner] with inner = prod(X.shape[axis:])
  Shape stat_shape;            // Mean / InvStdDev: X.shape[:axis] + ones
};

LayerNormShapes layer_norm_shapes(const KernelContext& ctx, const Tensor& x, const Tensor& scale) {
  LayerNormShapes s;
  s.axis = ctx.norm_axis(ctx.attr_int("axis", -1), x.rank());
  s.outer = 1;
  for (int64_t i = 0; i < s.axis; ++i) s.outer *= x.shape[static_cast<size_t>(i)];
  s.inner = x.numel() / std::max<int64_t>(s.outer, 1);
  s.stat_shape = x.shape;
  for (size_t i = static_cast<size_t>(s.axis); i < s.stat_shape.size(); ++i) s.stat_shape[i] = 1;
  ctx.expect_dtype(scale, DType::kFloat32, "Scale");
  // Scale (and B) cover the normalised dimensions exactly, possibly with leading ones.
  if (scale.numel() != s.inner)
    ctx.fail("Scale has shape " + shape_to_string(scale.shape) + ", expected " +
             shape_to_string(Shape(x.shape.begin() + s.axis, x.shape.end())));
  return s;
}

}  // namespace

void k_layer_norm(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  const Tensor& scale = ctx.in(1);
  LayerNormShapes s = layer_norm_shapes(ctx, x, scale);
  const float* bias = nullptr;
  if (ctx.has_in(2)) {
    ctx.expect_dtype(ctx.in(2), DType::kFloat32, "B");
    if (ctx.in(2).numel() != s.inner)
      ctx.fail("B has " + std::to_string(ctx.in(2).numel()) + " elements, expected " +
               std::to_string(s.inner));
    bias = ctx.in(2).as<float>();
  }
  ctx.expect_out(0, DType::kFloat32, x.shape);
  float* mean_out = nullptr;
  float* rstd_out = nullptr;
  if (ctx.has_out(1))
    ctx.expect_out(1, DType::kFloat32, s.stat_shape), mean_out = ctx.out(1).as<float>();
  if (ctx.has_out(2))
    ctx.expect_out(2, DType::kFloat32, s.stat_shape), rstd_out = ctx.out(2).as<float>();
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const float* xp = x.as<float>();
  const float* sc = scale.as<float>();
  float* yp = ctx.out(0).as<float>();
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* row = xp + o * s.inner;
    double mean = 0;
    for (int64_t i = 0; i < s.inner; ++i) mean += row[i];
    mean /= static_cast<double>(s.inner);
    double var = 0;
    for (int64_t i = 0; i < s.inner; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(s.inner);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < s.inner; ++i)
      yp[o * s.inner + i] =
          static_cast<float>((row[i] - mean) * rstd * sc[i] + (bias ? bias[i] : 0.0f));
    if (mean_out) mean_out[o] = static_cast<float>(mean);
    if (rstd_out) rstd_out[o] = static_cast<float>(rstd);
  }
}

void k_layer_norm_grad(const KernelContext& ctx) {
  // Inputs (dY, X, Scale), attributes axis and epsilon; outputs (dX, dScale, dBias), optional.
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (dy.shape != x.shape)
    ctx.fail("dY " + shape_to_string(dy.shape) + " and X " + shape_to_string(x.shape) + " differ");
  const Tensor& scale = ctx.in(2);
  LayerNormShapes s = layer_norm_shapes(ctx, x, scale);
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const float* xp = x.as<float>();
  const float* dyp = dy.as<float>();
  const float* sc = scale.as<float>();
  float* dx = nullptr;
  if (ctx.has_out(0)) ctx.expect_out(0, DType::kFloat32, x.shape), dx = ctx.out(0).as<float>();
  std::vector<double> dscale(static_cast<size_t>(s.inner), 0.0),
      dbias(static_cast<size_t>(s.inner), 0.0);
  std::vector<double> xhat(static_cast<size_t>(s.inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* row = xp + o * s.inner;
    const float* g = dyp + o * s.inner;
    double mean = 0;
    for (int64_t i = 0; i < s.inner; ++i) mean += row[i];
    mean /= static_cast<double>(s.inner);
    double var = 0;
    for (int64_t i = 0; i < s.inner; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(s.inner);
    const double rstd = 1.0 / std::sqrt(var + eps);
    double sum_g = 0, sum_gx = 0;  // of dxhat and dxhat * xhat
    for (int64_t i = 0; i < s.inner; ++i) {
      const size_t iu = static_cast<size_t>(i);
      xhat[iu] = (row[i] - mean) * rstd;
      const double dxh = g[i] * static_cast<double>(sc[i]);
      sum_g += dxh;
      sum_gx += dxh * xhat[iu];
      dscale[iu] += g[i] * xhat[iu];
      dbias[iu] += g[i];
    }
    if (!dx) continue;
    const double n = static_cast<double>(s.inner);
    for (int64_t i = 0; i < s.inner; ++i) {
      const double dxh = g[i] * static_cast<double>(sc[i]);
      dx[o * s.inner + i] =
          static_cast<float>(rstd * (dxh - sum_g / n - xhat[static_cast<size_t>(i)] * sum_gx / n));
    }
  }
  for (size_t k = 1; k <= 2; ++k) {
    if (!ctx.has_out(k)) continue;
    ctx.expect_dtype(ctx.out(k), DType::kFloat32, "output " + std::to_string(k));
    if (ctx.out(k).numel() != s.inner)
      ctx.fail("output " + std::to_string(k) + " has shape " + shape_to_string(ctx.out(k).shape) +
               ", expected Scale's shape " + shape_to_string(scale.shape));
    float* o = ctx.out(k).as<float>();
    const auto& src = k == 1 ? dscale : dbias;
    for (int64_t i = 0; i < s.inner; ++i) o[i] = static_cast<float>(src[static_cast<size_t>(i)]);
  }
}

void k_softmax(const KernelContext& ctx) {
  // Opset 13 semantics: normalise along one axis (default -1).
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "input");
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const bool log = ctx.op_type == "LogSoftmax";
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  AxisView v = axis_view(x.shape, ctx.norm_axis(ctx.attr_int("axis", -1), x.rank()));
  const float* xp = x.as<float>();
  float* yp = ctx.out(0).as<float>();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const int64_t base = o * v.extent * v.inner + in;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < v.extent; ++k) m = std::max(m, xp[base + k * v.inner]);
      double sum = 0;
      for (int64_t k = 0; k < v.extent; ++k)
        sum += std::exp(static_cast<double>(xp[base + k * v.inner]) - m);
      const double lse = std::log(sum);
      for (int64_t k = 0; k < v.extent; ++k) {
        const double z = static_cast<double>(xp[base + k * v.inner]) - m;
        yp[base + k * v.inner] = static_cast<float>(log ? z - lse : std::exp(z - lse));
      }
    }
}

void k_softmax_grad(const KernelContext& ctx) {
  // Inputs (dY, Y), attributes op=Softmax|LogSoftmax and axis.
  //   Softmax:    dX = Y * (dY - sum(dY * Y))
  //   LogSoftmax: dX = dY - exp(Y) * sum(dY)
  const Tensor& dy = ctx.in(0);
  const Tensor& y = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(y, DType::kFloat32, "Y");
  if (dy.shape != y.shape || y.rank() == 0)
    ctx.fail("dY and Y must have the same shape of rank >= 1");
  ctx.expect_out(0, DType::kFloat32, y.shape);
  std::string op = ctx.attr_string("op", "Softmax");
  if (op != "Softmax" && op != "LogSoftmax") ctx.fail("attribute op must be Softmax or LogSoftmax");
  AxisView v = axis_view(y.shape, ctx.norm_axis(ctx.attr_int("axis", -1), y.rank()));
  const float* g = dy.as<float>();
  const float* yp = y.as<float>();
  float* dx = ctx.out(0).as<float>();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const int64_t base = o * v.extent * v.inner + in;
      double sum = 0;
      for (int64_t k = 0; k < v.extent; ++k) {
        const int64_t i = base + k * v.inner;
        sum += op == "Softmax" ? static_cast<double>(g[i]) * yp[i] : g[i];
      }
      for (int64_t k = 0; k < v.extent; ++k) {
        const int64_t i = base + k * v.inner;
        dx[i] =
            static_cast<float>(op == "Softmax" ? yp[i] * (g[i] - sum)
                                               : g[i] - std::exp(static_cast<double>(yp[i])) * sum);
      }
    }
}

}  // namespace planner::rt::kernels
