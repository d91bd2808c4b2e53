// BatchNormalization (inference form), LayerNormalization, Softmax/LogSoftmax, and their
// gradients: BatchNormGrad/BatchNormParamGrad, LayerNormGrad/LayerNormParamGrad, SoftmaxGrad;
// batch norm's training form: BatchNormStats, BatchNormTrain, BatchNormRunningStats,
// BatchNormTrainParamGrad, BatchNormTrainGrad.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernel_util.h"
#include "train_math.h"

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
  // Inputs (dY, scale, var), attribute epsilon; output dX. The inference form treats mean and
  // var as constants, so dX = dY * scale_c / sqrt(var_c + eps), channel c along axis 1.
  ctx.expect_arity(3, 1, "(dY, scale, var) -> dX");
  const Tensor& dy = ctx.in(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  if (dy.rank() < 2) ctx.fail("dY must have rank >= 2");
  const int64_t c = dy.shape[1];
  check_channel(ctx, ctx.in(1), c, "scale");
  check_channel(ctx, ctx.in(2), c, "var");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const float *sc = ctx.in(1).as<float>(), *var = ctx.in(2).as<float>();
  const AxisView v = axis_view(dy.shape, 1);
  const float* g = dy.as<float>();
  float* dx = ctx.out(0).as<float>();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double a = sc[ch] / std::sqrt(static_cast<double>(var[ch]) + eps);
      const int64_t base = (o * c + ch) * v.inner;
      for (int64_t i = 0; i < v.inner; ++i) dx[base + i] = static_cast<float>(g[base + i] * a);
    }
}

void k_batch_norm_param_grad(const KernelContext& ctx) {
  // Inputs (dY, X, mean, var), attribute epsilon; outputs (dScale, dB), each optional:
  // dScale_c = sum dY * (X - mean_c) / sqrt(var_c + eps), dB_c = sum dY, over every axis but 1,
  // folded in row-major order in double.
  ctx.expect_arity(4, 2, "(dY, X, mean, var) -> (dScale, dB)");
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (x.rank() < 2 || dy.shape != x.shape)
    ctx.fail("dY " + shape_to_string(dy.shape) + " and X " + shape_to_string(x.shape) +
             " must be the same shape of rank >= 2");
  const int64_t c = x.shape[1];
  check_channel(ctx, ctx.in(2), c, "mean");
  check_channel(ctx, ctx.in(3), c, "var");
  for (size_t k = 0; k < 2; ++k)
    if (ctx.has_out(k)) ctx.expect_out(k, DType::kFloat32, {c});
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const float *mean = ctx.in(2).as<float>(), *var = ctx.in(3).as<float>();
  const AxisView v = axis_view(x.shape, 1);
  const float* xp = x.as<float>();
  const float* g = dy.as<float>();
  std::vector<double> dscale(static_cast<size_t>(c), 0.0), dbias(static_cast<size_t>(c), 0.0);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (o * c + ch) * v.inner;
      double ds = 0, db = 0;
      for (int64_t i = 0; i < v.inner; ++i) {
        ds += static_cast<double>(g[base + i]) * (xp[base + i] - mean[ch]);
        db += g[base + i];
      }
      dscale[static_cast<size_t>(ch)] += ds;
      dbias[static_cast<size_t>(ch)] += db;
    }
  for (size_t k = 0; k < 2; ++k) {
    if (!ctx.has_out(k)) continue;
    float* out = ctx.out(k).as<float>();
    for (int64_t ch = 0; ch < c; ++ch) {
      const size_t cu = static_cast<size_t>(ch);
      out[ch] = static_cast<float>(
          k == 0 ? dscale[cu] / std::sqrt(static_cast<double>(var[ch]) + eps) : dbias[cu]);
    }
  }
}

namespace {

// X viewed as rows for LayerNormalization: [outer, inner], inner = prod(X.shape[axis:]).
struct LayerNormShapes {
  int64_t axis = 0, outer = 1, inner = 1;
  Shape stat_shape;  // Mean / InvStdDev: X.shape[:axis] + ones
  Shape normalized;  // X.shape[axis:], the shape of Scale and B
};

LayerNormShapes layer_norm_shapes(const KernelContext& ctx, const Tensor& x) {
  LayerNormShapes s;
  s.axis = ctx.norm_axis(ctx.attr_int("axis", -1), x.rank());
  for (int64_t i = 0; i < s.axis; ++i) s.outer *= x.shape[static_cast<size_t>(i)];
  s.normalized.assign(x.shape.begin() + s.axis, x.shape.end());
  s.inner = num_elements(s.normalized);
  s.stat_shape = x.shape;
  for (size_t i = static_cast<size_t>(s.axis); i < s.stat_shape.size(); ++i) s.stat_shape[i] = 1;
  return s;
}

// Fails unless `t` (Scale, B, or their gradients) is f32 and covers the normalised dimensions
// X.shape[axis:] element for element (the shape itself may differ, e.g. by leading ones, as
// the forward op has always accepted).
void check_norm_param(const KernelContext& ctx, const Tensor& t, const LayerNormShapes& s,
                      const std::string& what) {
  ctx.expect_dtype(t, DType::kFloat32, what);
  if (t.numel() != s.inner)
    ctx.fail(what + " has shape " + shape_to_string(t.shape) + ", expected " +
             shape_to_string(s.normalized));
}

// One row's statistics, in double and in a fixed order: the forward op, LayerNormGrad and
// LayerNormParamGrad all recompute them this way, so they agree bit for bit.
struct RowStats {
  double mean = 0, rstd = 1;  // rstd = 1 / sqrt(var + eps), var the biased variance
};

RowStats row_stats(const float* row, int64_t n, double eps) {
  RowStats r;
  for (int64_t i = 0; i < n; ++i) r.mean += row[i];
  r.mean /= static_cast<double>(n);
  double var = 0;
  for (int64_t i = 0; i < n; ++i) var += (row[i] - r.mean) * (row[i] - r.mean);
  var /= static_cast<double>(n);
  r.rstd = 1.0 / std::sqrt(var + eps);
  return r;
}

// The checks LayerNormGrad and LayerNormParamGrad share: dY (input 0) and X (input 1) are f32
// tensors of one shape; returns X's row view.
LayerNormShapes layer_norm_grad_shapes(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (dy.shape != x.shape)
    ctx.fail("dY " + shape_to_string(dy.shape) + " and X " + shape_to_string(x.shape) + " differ");
  return layer_norm_shapes(ctx, x);
}

}  // namespace

void k_layer_norm(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  const LayerNormShapes s = layer_norm_shapes(ctx, x);
  const Tensor& scale = ctx.in(1);
  check_norm_param(ctx, scale, s, "Scale");
  const float* bias = nullptr;
  if (ctx.has_in(2)) {
    check_norm_param(ctx, ctx.in(2), s, "B");
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
    const RowStats st = row_stats(row, s.inner, eps);
    for (int64_t i = 0; i < s.inner; ++i)
      yp[o * s.inner + i] =
          static_cast<float>((row[i] - st.mean) * st.rstd * sc[i] + (bias ? bias[i] : 0.0f));
    if (mean_out) mean_out[o] = static_cast<float>(st.mean);
    if (rstd_out) rstd_out[o] = static_cast<float>(st.rstd);
  }
}

void k_layer_norm_grad(const KernelContext& ctx) {
  // Inputs (dY, X, Scale), attributes axis and epsilon; output dX. Per row, with
  // x̂ = (X - mean) * rstd and g = dY * Scale: dX = rstd * (g - mean(g) - x̂ * mean(g * x̂)).
  ctx.expect_arity(3, 1, "(dY, X, Scale) -> dX");
  const LayerNormShapes s = layer_norm_grad_shapes(ctx);
  const Tensor& x = ctx.in(1);
  const Tensor& scale = ctx.in(2);
  check_norm_param(ctx, scale, s, "Scale");
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const float* xp = x.as<float>();
  const float* dyp = ctx.in(0).as<float>();
  const float* sc = scale.as<float>();
  float* dx = ctx.out(0).as<float>();
  const double n = static_cast<double>(s.inner);
  std::vector<double> xhat(static_cast<size_t>(s.inner)), gs(static_cast<size_t>(s.inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* row = xp + o * s.inner;
    const float* g = dyp + o * s.inner;
    const RowStats st = row_stats(row, s.inner, eps);
    double sum_g = 0, sum_gx = 0;  // of g and g * x̂
    for (int64_t i = 0; i < s.inner; ++i) {
      const size_t iu = static_cast<size_t>(i);
      xhat[iu] = (row[i] - st.mean) * st.rstd;
      gs[iu] = static_cast<double>(g[i]) * sc[i];
      sum_g += gs[iu];
      sum_gx += gs[iu] * xhat[iu];
    }
    for (int64_t i = 0; i < s.inner; ++i) {
      const size_t iu = static_cast<size_t>(i);
      dx[o * s.inner + i] =
          static_cast<float>(st.rstd * (gs[iu] - sum_g / n - xhat[iu] * sum_gx / n));
    }
  }
}

void k_layer_norm_param_grad(const KernelContext& ctx) {
  // Inputs (dY, X), attributes axis and epsilon; outputs (dScale, dB), each optional and of
  // Scale's shape: dScale = sum over rows of dY * x̂, dB = sum over rows of dY (rows in order,
  // accumulated in double).
  ctx.expect_arity(2, 2, "(dY, X) -> (dScale, dB)");
  const LayerNormShapes s = layer_norm_grad_shapes(ctx);
  for (size_t k = 0; k < 2; ++k)
    if (ctx.has_out(k)) check_norm_param(ctx, ctx.out(k), s, k == 0 ? "dScale" : "dB");
  const bool want_scale = ctx.has_out(0), want_bias = ctx.has_out(1);
  const double eps = ctx.attr_float("epsilon", 1e-5);
  const float* xp = ctx.in(1).as<float>();
  const float* dyp = ctx.in(0).as<float>();
  std::vector<double> dscale(static_cast<size_t>(s.inner), 0.0),
      dbias(static_cast<size_t>(s.inner), 0.0);
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* row = xp + o * s.inner;
    const float* g = dyp + o * s.inner;
    if (want_scale) {
      const RowStats st = row_stats(row, s.inner, eps);
      for (int64_t i = 0; i < s.inner; ++i)
        dscale[static_cast<size_t>(i)] += g[i] * ((row[i] - st.mean) * st.rstd);
    }
    if (want_bias)
      for (int64_t i = 0; i < s.inner; ++i) dbias[static_cast<size_t>(i)] += g[i];
  }
  for (size_t k = 0; k < 2; ++k) {
    if (!ctx.has_out(k)) continue;
    float* out = ctx.out(k).as<float>();
    const auto& src = k == 0 ? dscale : dbias;
    for (int64_t i = 0; i < s.inner; ++i) out[i] = static_cast<float>(src[static_cast<size_t>(i)]);
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

// ---- training-mode batch norm (docs/training.md) ---------------------------------------------

namespace planner::rt::kernels {

namespace {

// Stats [2, C] of BatchNormStats, as per-channel mean and 1/std.
std::vector<ChannelStats> read_stats(const KernelContext& ctx, const Tensor& stats, int64_t c,
                                     double eps) {
  ctx.expect_dtype(stats, DType::kFloat32, "stats");
  if (stats.shape != Shape{2, c})
    ctx.fail("stats has shape " + shape_to_string(stats.shape) + ", expected [2, " +
             std::to_string(c) + "]");
  const float* s = stats.as<float>();
  std::vector<ChannelStats> out(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch)
    out[static_cast<size_t>(ch)] = channel_stats(s[ch], s[c + ch], eps);
  return out;
}

// X of rank >= 2, float; returns C.
int64_t expect_nc(const KernelContext& ctx, const Tensor& x, const char* what) {
  ctx.expect_dtype(x, DType::kFloat32, what);
  if (x.rank() < 2) ctx.fail(std::string(what) + " must have rank >= 2");
  return x.shape[1];
}

}  // namespace

void k_batch_norm_stats(const KernelContext& ctx) {
  // X -> stats[2, C]: sum(x) / count and sum(x^2) / count per channel, folded in double;
  // count is the whole batch's elements per channel (a shard's sums are partial).
  ctx.expect_arity(1, 1, "(X) -> stats");
  const Tensor& x = ctx.in(0);
  const int64_t c = expect_nc(ctx, x, "X");
  ctx.expect_out(0, DType::kFloat32, {2, c});
  const double count = static_cast<double>(ctx.attr_int("count", 0));
  if (count <= 0) ctx.fail("attribute count must be positive");
  const AxisView v = axis_view(x.shape, 1);
  const float* xp = x.as<float>();
  std::vector<double> sum(static_cast<size_t>(c), 0.0), sq(static_cast<size_t>(c), 0.0);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* p = xp + (o * c + ch) * v.inner;
      double s = 0, q = 0;
      for (int64_t i = 0; i < v.inner; ++i) s += p[i], q += static_cast<double>(p[i]) * p[i];
      sum[static_cast<size_t>(ch)] += s;
      sq[static_cast<size_t>(ch)] += q;
    }
  float* out = ctx.out(0).as<float>();
  for (int64_t ch = 0; ch < c; ++ch) {
    out[ch] = static_cast<float>(sum[static_cast<size_t>(ch)] / count);
    out[c + ch] = static_cast<float>(sq[static_cast<size_t>(ch)] / count);
  }
}

void k_batch_norm_train(const KernelContext& ctx) {
  ctx.expect_arity(4, 1, "(X, scale, B, stats) -> Y");
  const Tensor& x = ctx.in(0);
  const int64_t c = expect_nc(ctx, x, "X");
  check_channel(ctx, ctx.in(1), c, "scale");
  check_channel(ctx, ctx.in(2), c, "B");
  const auto stats = read_stats(ctx, ctx.in(3), c, ctx.attr_float("epsilon", 1e-5));
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const float *sc = ctx.in(1).as<float>(), *b = ctx.in(2).as<float>(), *xp = x.as<float>();
  float* y = ctx.out(0).as<float>();
  const AxisView v = axis_view(x.shape, 1);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (o * c + ch) * v.inner;
      const ChannelStats s = stats[static_cast<size_t>(ch)];
      for (int64_t i = 0; i < v.inner; ++i)
        y[base + i] = batch_norm_train_value(xp[base + i], s, sc[ch], b[ch]);
    }
}

void k_batch_norm_running_stats(const KernelContext& ctx) {
  // (stats, mean, var) -> (running_mean, running_var, saved_mean, saved_var), each optional:
  // running = input * momentum + batch * (1 - momentum) (ONNX; the batch variance is the
  // population one), saved = the batch's mean and variance.
  ctx.expect_arity(3, 4,
                   "(stats, mean, var) -> (running_mean, running_var, saved_mean, saved_var)");
  const Tensor& stats = ctx.in(0);
  ctx.expect_dtype(stats, DType::kFloat32, "stats");
  if (stats.rank() != 2 || stats.shape[0] != 2) ctx.fail("stats must have shape [2, C]");
  const int64_t c = stats.shape[1];
  check_channel(ctx, ctx.in(1), c, "mean");
  check_channel(ctx, ctx.in(2), c, "var");
  const double m = ctx.attr_float("momentum", 0.9);
  const float *s = stats.as<float>(), *mean = ctx.in(1).as<float>(), *var = ctx.in(2).as<float>();
  for (size_t k = 0; k < 4; ++k) {
    if (!ctx.has_out(k)) continue;
    ctx.expect_out(k, DType::kFloat32, {c});
    float* out = ctx.out(k).as<float>();
    for (int64_t ch = 0; ch < c; ++ch)
      out[ch] = running_stat(static_cast<int>(k), s[ch], s[c + ch], mean[ch], var[ch], m);
  }
}

void k_batch_norm_train_param_grad(const KernelContext& ctx) {
  // (dY, X, stats) -> (dScale, dB): sum(dY * xhat) and sum(dY) per channel, in double.
  ctx.expect_arity(3, 2, "(dY, X, stats) -> (dScale, dB)");
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const int64_t c = expect_nc(ctx, x, "X");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  if (dy.shape != x.shape)
    ctx.fail("dY " + shape_to_string(dy.shape) + " and X " + shape_to_string(x.shape) + " differ");
  const auto stats = read_stats(ctx, ctx.in(2), c, ctx.attr_float("epsilon", 1e-5));
  const AxisView v = axis_view(x.shape, 1);
  const float *g = dy.as<float>(), *xp = x.as<float>();
  std::vector<double> ds(static_cast<size_t>(c), 0.0), db(static_cast<size_t>(c), 0.0);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (o * c + ch) * v.inner;
      const ChannelStats s = stats[static_cast<size_t>(ch)];
      double a = 0, b = 0;
      for (int64_t i = 0; i < v.inner; ++i) {
        a += static_cast<double>(g[base + i]) * ((xp[base + i] - s.mean) * s.inv_std);
        b += g[base + i];
      }
      ds[static_cast<size_t>(ch)] += a;
      db[static_cast<size_t>(ch)] += b;
    }
  for (size_t k = 0; k < 2; ++k) {
    if (!ctx.has_out(k)) continue;
    ctx.expect_out(k, DType::kFloat32, {c});
    float* out = ctx.out(k).as<float>();
    for (int64_t ch = 0; ch < c; ++ch)
      out[ch] = static_cast<float>((k == 0 ? ds : db)[static_cast<size_t>(ch)]);
  }
}

void k_batch_norm_train_grad(const KernelContext& ctx) {
  // (dY, X, scale, stats, dScale, dB) -> dX, with count the whole batch's elements per channel.
  ctx.expect_arity(6, 1, "(dY, X, scale, stats, dScale, dB) -> dX");
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const int64_t c = expect_nc(ctx, x, "X");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  if (dy.shape != x.shape)
    ctx.fail("dY " + shape_to_string(dy.shape) + " and X " + shape_to_string(x.shape) + " differ");
  check_channel(ctx, ctx.in(2), c, "scale");
  const auto stats = read_stats(ctx, ctx.in(3), c, ctx.attr_float("epsilon", 1e-5));
  check_channel(ctx, ctx.in(4), c, "dScale");
  check_channel(ctx, ctx.in(5), c, "dB");
  const double count = static_cast<double>(ctx.attr_int("count", 0));
  if (count <= 0) ctx.fail("attribute count must be positive");
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const float *g = dy.as<float>(), *xp = x.as<float>(), *sc = ctx.in(2).as<float>(),
              *dsc = ctx.in(4).as<float>(), *dbi = ctx.in(5).as<float>();
  float* dx = ctx.out(0).as<float>();
  const AxisView v = axis_view(x.shape, 1);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (o * c + ch) * v.inner;
      const ChannelStats s = stats[static_cast<size_t>(ch)];
      for (int64_t i = 0; i < v.inner; ++i)
        dx[base + i] = batch_norm_train_grad_value(g[base + i], xp[base + i], s, sc[ch], dsc[ch],
                                                   dbi[ch], count);
    }
}

}  // namespace planner::rt::kernels
