// The cuda backend's reductions, global pooling, Softmax, LayerNormalization and
// BatchNormalization with their gradients: the cpu kernels' checks, then norm.cu's launchers.
#include <algorithm>

#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"

namespace planner::rt::kernels {

namespace {

cudaStream_t stream() {
  return cuda::context().stream;
}

// The reduction of x over the axes marked in `reduced` (kept axes enumerate the outputs in
// row-major order); false when either part has more dimensions than the kernels take.
bool reduce_geom(const Shape& x, const std::vector<bool>& reduced, cuda::ReduceGeom* g) {
  *g = cuda::ReduceGeom();
  const std::vector<int64_t> st = strides_of(x);
  g->n_out = 1;
  g->n_red = 1;
  for (size_t d = 0; d < x.size(); ++d) {
    if (reduced[d]) {
      if (g->red_rank == cuda::kMaxDims) return false;
      g->red_shape[g->red_rank] = x[d];
      g->red_strides[g->red_rank++] = st[d];
      g->n_red *= x[d];
    } else {
      if (g->kept_rank == cuda::kMaxDims) return false;
      g->kept_shape[g->kept_rank] = x[d];
      g->kept_strides[g->kept_rank++] = st[d];
      g->n_out *= x[d];
    }
  }
  return true;
}

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

cuda::ReduceKind reduce_kind(const KernelContext& ctx, std::string_view t) {
  if (t == "ReduceSum") return cuda::ReduceKind::kSum;
  if (t == "ReduceMean") return cuda::ReduceKind::kMean;
  if (t == "ReduceMax") return cuda::ReduceKind::kMax;
  if (t == "ReduceMin") return cuda::ReduceKind::kMin;
  ctx.fail("unsupported reduction '" + std::string(t) + "'");
}

void check_channel(const KernelContext& ctx, const Tensor& t, int64_t c, const char* what) {
  ctx.expect_dtype(t, DType::kFloat32, what);
  if (t.shape != Shape{c})
    ctx.fail(std::string(what) + " has shape " + shape_to_string(t.shape) + ", expected [" +
             std::to_string(c) + "]");
}

}  // namespace

void c_reduce(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.dtype != DType::kFloat32) return host_fallback(ctx, k_reduce);
  const cuda::ReduceKind kind = reduce_kind(ctx, ctx.op_type);
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (ctx.has_in(1)) {
    std::vector<uint8_t> storage;
    axes = ctx.ints_of(cuda::host_view(ctx.in(1), storage), "axes");
  }
  const bool keep = ctx.attr_int("keepdims", 1) != 0;
  std::vector<bool> reduced(x.shape.size(), false);
  if (axes.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) {
      ctx.expect_out(0, x.dtype, x.shape);
      if (x.bytes() && ctx.out(0).data != x.data)
        PLANNER_CUDA_CHECK(cudaMemcpyAsync(ctx.out(0).data, x.data, x.bytes(),
                                           cudaMemcpyDeviceToDevice, stream()));
      return;
    }
    std::fill(reduced.begin(), reduced.end(), true);
  }
  for (int64_t a : axes) {
    const int64_t n = ctx.norm_axis(a, x.rank());
    if (reduced[static_cast<size_t>(n)]) ctx.fail("axis " + std::to_string(a) + " is repeated");
    reduced[static_cast<size_t>(n)] = true;
  }
  Shape out;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (!reduced[i] || keep) out.push_back(reduced[i] ? 1 : x.shape[i]);
  ctx.expect_out(0, x.dtype, out);
  cuda::ReduceGeom g;
  if (!reduce_geom(x.shape, reduced, &g)) return host_fallback(ctx, k_reduce);
  cuda::launch_reduce(kind, g, x.as<float>(), ctx.out(0).as<float>(), stream());
}

void c_reduce_grad(const KernelContext& ctx) {
  const std::string op = ctx.attr_string("op", "");
  // Max/Min split the gradient among ties: the cpu kernel does it on the host.
  if (op != "ReduceSum" && op != "ReduceMean") return host_fallback(ctx, k_reduce_grad);
  size_t n_in = ctx.inputs.size();
  while (n_in > 0 && !ctx.inputs[n_in - 1].present()) --n_in;
  if (n_in != 2)
    ctx.fail("op=" + op + " takes 2 inputs (dY, X), got " + std::to_string(n_in) +
             " (the axes are an attribute)");
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (!ctx.has_attr("axes")) ctx.fail("attribute axes is missing");
  const std::vector<int64_t> axes = ctx.attr_ints("axes");
  const int64_t rank = x.rank();
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1]))
      ctx.fail("attribute axes " + shape_to_string(axes) +
               " is not a strictly increasing list of axes of a rank-" + std::to_string(rank) +
               " X");
  const bool keep = ctx.attr_int("keepdims", 1) != 0;
  Shape kept = x.shape, out;
  int64_t count = 1;
  for (int64_t a : axes) kept[static_cast<size_t>(a)] = 1, count *= x.shape[static_cast<size_t>(a)];
  for (size_t i = 0; i < x.shape.size(); ++i) {
    const bool r = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i));
    if (!r || keep) out.push_back(r ? 1 : x.shape[i]);
  }
  if (axes.empty()) out = x.shape;
  if (dy.shape != out)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " + shape_to_string(out));
  ctx.expect_out(0, DType::kFloat32, x.shape);
  cuda::Strided s;
  if (x.shape.size() > static_cast<size_t>(cuda::kMaxDims))
    return host_fallback(ctx, k_reduce_grad);
  s.rank = static_cast<int>(x.shape.size());
  const std::vector<int64_t> st = broadcast_strides(kept, x.shape);
  for (size_t d = 0; d < x.shape.size(); ++d) s.shape[d] = x.shape[d], s.strides[0][d] = st[d];
  const double scale =
      op == "ReduceMean" ? 1.0 / static_cast<double>(std::max<int64_t>(count, 1)) : 1.0;
  cuda::launch_broadcast_scale(s, dy.as<float>(), static_cast<float>(scale), ctx.out(0).as<float>(),
                               stream());
}

void c_global_pool(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (x.rank() < 3) ctx.fail("X " + shape_to_string(x.shape) + " must have rank >= 3");
  Shape out(x.shape.size(), 1);
  out[0] = x.shape[0];
  out[1] = x.shape[1];
  ctx.expect_out(0, DType::kFloat32, out);
  const int64_t planes = x.shape[0] * x.shape[1];
  cuda::ReduceGeom g;
  g.kept_rank = 1;
  g.kept_shape[0] = planes;
  g.kept_strides[0] = x.numel() / std::max<int64_t>(planes, 1);
  g.red_rank = 1;
  g.red_shape[0] = g.kept_strides[0];
  g.red_strides[0] = 1;
  g.n_out = planes;
  g.n_red = g.red_shape[0];
  const bool max = ctx.op_type == "GlobalMaxPool";
  cuda::launch_reduce(max ? cuda::ReduceKind::kMax : cuda::ReduceKind::kMean, g, x.as<float>(),
                      ctx.out(0).as<float>(), stream());
}

void c_softmax(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "input");
  ctx.expect_out(0, DType::kFloat32, x.shape);
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const AxisView v = axis_view(x.shape, ctx.norm_axis(ctx.attr_int("axis", -1), x.rank()));
  cuda::launch_softmax(ctx.op_type == "LogSoftmax", x.as<float>(), ctx.out(0).as<float>(), v.outer,
                       v.extent, v.inner, stream());
}

void c_softmax_grad(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& y = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(y, DType::kFloat32, "Y");
  if (dy.shape != y.shape || y.rank() == 0)
    ctx.fail("dY and Y must have the same shape of rank >= 1");
  ctx.expect_out(0, DType::kFloat32, y.shape);
  const std::string op = ctx.attr_string("op", "Softmax");
  if (op != "Softmax" && op != "LogSoftmax") ctx.fail("attribute op must be Softmax or LogSoftmax");
  const AxisView v = axis_view(y.shape, ctx.norm_axis(ctx.attr_int("axis", -1), y.rank()));
  cuda::launch_softmax_grad(op == "LogSoftmax", dy.as<float>(), y.as<float>(),
                            ctx.out(0).as<float>(), v.outer, v.extent, v.inner, stream());
}

namespace {

struct LayerNormShapes {
  int64_t outer = 1, inner = 1;
  Shape stat_shape, normalized;
};

LayerNormShapes layer_norm_shapes(const KernelContext& ctx, const Tensor& x) {
  LayerNormShapes s;
  const int64_t axis = ctx.norm_axis(ctx.attr_int("axis", -1), x.rank());
  for (int64_t i = 0; i < axis; ++i) s.outer *= x.shape[static_cast<size_t>(i)];
  s.normalized.assign(x.shape.begin() + axis, x.shape.end());
  s.inner = num_elements(s.normalized);
  s.stat_shape = x.shape;
  for (size_t i = static_cast<size_t>(axis); i < s.stat_shape.size(); ++i) s.stat_shape[i] = 1;
  return s;
}

void check_norm_param(const KernelContext& ctx, const Tensor& t, const LayerNormShapes& s,
                      const std::string& what) {
  ctx.expect_dtype(t, DType::kFloat32, what);
  if (t.numel() != s.inner)
    ctx.fail(what + " has shape " + shape_to_string(t.shape) + ", expected " +
             shape_to_string(s.normalized));
}

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

void c_layer_norm(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  const LayerNormShapes s = layer_norm_shapes(ctx, x);
  check_norm_param(ctx, ctx.in(1), s, "Scale");
  const float* bias = nullptr;
  if (ctx.has_in(2)) {
    check_norm_param(ctx, ctx.in(2), s, "B");
    bias = ctx.in(2).as<float>();
  }
  ctx.expect_out(0, DType::kFloat32, x.shape);
  float* mean = nullptr;
  float* rstd = nullptr;
  if (ctx.has_out(1))
    ctx.expect_out(1, DType::kFloat32, s.stat_shape), mean = ctx.out(1).as<float>();
  if (ctx.has_out(2))
    ctx.expect_out(2, DType::kFloat32, s.stat_shape), rstd = ctx.out(2).as<float>();
  cuda::launch_layer_norm(x.as<float>(), ctx.in(1).as<float>(), bias, ctx.out(0).as<float>(), mean,
                          rstd, s.outer, s.inner, ctx.attr_float("epsilon", 1e-5), stream());
}

void c_layer_norm_grad(const KernelContext& ctx) {
  ctx.expect_arity(3, 1, "(dY, X, Scale) -> dX");
  const LayerNormShapes s = layer_norm_grad_shapes(ctx);
  check_norm_param(ctx, ctx.in(2), s, "Scale");
  ctx.expect_out(0, DType::kFloat32, ctx.in(1).shape);
  cuda::launch_layer_norm_grad(ctx.in(0).as<float>(), ctx.in(1).as<float>(), ctx.in(2).as<float>(),
                               ctx.out(0).as<float>(), s.outer, s.inner,
                               ctx.attr_float("epsilon", 1e-5), stream());
}

void c_layer_norm_param_grad(const KernelContext& ctx) {
  ctx.expect_arity(2, 2, "(dY, X) -> (dScale, dB)");
  const LayerNormShapes s = layer_norm_grad_shapes(ctx);
  for (size_t k = 0; k < 2; ++k)
    if (ctx.has_out(k)) check_norm_param(ctx, ctx.out(k), s, k == 0 ? "dScale" : "dB");
  if (!ctx.has_out(0) && !ctx.has_out(1)) return;
  cuda::Context& c = cuda::context();
  double* stats = static_cast<double*>(
      c.temp[0].get(sizeof(double) * 2 * static_cast<size_t>(std::max<int64_t>(s.outer, 1))));
  cuda::launch_layer_norm_param_grad(ctx.in(0).as<float>(), ctx.in(1).as<float>(),
                                     ctx.has_out(0) ? ctx.out(0).as<float>() : nullptr,
                                     ctx.has_out(1) ? ctx.out(1).as<float>() : nullptr, stats,
                                     s.outer, s.inner, ctx.attr_float("epsilon", 1e-5), c.stream);
}

void c_batch_norm(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (x.rank() < 2) ctx.fail("X must have rank >= 2");
  if (ctx.attr_int("training_mode", 0) != 0 || ctx.has_out(1))
    ctx.fail("training mode is not supported (the inference form is differentiated)");
  const int64_t c = x.shape[1];
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i <= 4; ++i) check_channel(ctx, ctx.in(i), c, names[i - 1]);
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const AxisView v = axis_view(x.shape, 1);
  cuda::launch_batch_norm(x.as<float>(), ctx.in(1).as<float>(), ctx.in(2).as<float>(),
                          ctx.in(3).as<float>(), ctx.in(4).as<float>(), ctx.out(0).as<float>(),
                          v.outer, c, v.inner, ctx.attr_float("epsilon", 1e-5), stream());
}

void c_batch_norm_grad(const KernelContext& ctx) {
  ctx.expect_arity(3, 1, "(dY, scale, var) -> dX");
  const Tensor& dy = ctx.in(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  if (dy.rank() < 2) ctx.fail("dY must have rank >= 2");
  const int64_t c = dy.shape[1];
  check_channel(ctx, ctx.in(1), c, "scale");
  check_channel(ctx, ctx.in(2), c, "var");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  const AxisView v = axis_view(dy.shape, 1);
  cuda::launch_batch_norm_grad(dy.as<float>(), ctx.in(1).as<float>(), ctx.in(2).as<float>(),
                               ctx.out(0).as<float>(), v.outer, c, v.inner,
                               ctx.attr_float("epsilon", 1e-5), stream());
}

void c_batch_norm_param_grad(const KernelContext& ctx) {
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
  const AxisView v = axis_view(x.shape, 1);
  cuda::launch_batch_norm_param_grad(dy.as<float>(), x.as<float>(), ctx.in(2).as<float>(),
                                     ctx.in(3).as<float>(),
                                     ctx.has_out(0) ? ctx.out(0).as<float>() : nullptr,
                                     ctx.has_out(1) ? ctx.out(1).as<float>() : nullptr, v.outer, c,
                                     v.inner, ctx.attr_float("epsilon", 1e-5), stream());
}

// ---- training-mode batch norm: the cpu kernels' checks, then norm.cu's launchers -------------

namespace {

// X of rank >= 2, float; returns C.
int64_t expect_nc(const KernelContext& ctx, const Tensor& x, const char* what) {
  ctx.expect_dtype(x, DType::kFloat32, what);
  if (x.rank() < 2) ctx.fail(std::string(what) + " must have rank >= 2");
  return x.shape[1];
}

void check_stats(const KernelContext& ctx, const Tensor& stats, int64_t c) {
  ctx.expect_dtype(stats, DType::kFloat32, "stats");
  if (stats.shape != Shape{2, c})
    ctx.fail("stats has shape " + shape_to_string(stats.shape) + ", expected [2, " +
             std::to_string(c) + "]");
}

double positive_count(const KernelContext& ctx) {
  const double count = static_cast<double>(ctx.attr_int("count", 0));
  if (count <= 0) ctx.fail("attribute count must be positive");
  return count;
}

}  // namespace

void c_batch_norm_stats(const KernelContext& ctx) {
  ctx.expect_arity(1, 1, "(X) -> stats");
  const Tensor& x = ctx.in(0);
  const int64_t c = expect_nc(ctx, x, "X");
  ctx.expect_out(0, DType::kFloat32, {2, c});
  const AxisView v = axis_view(x.shape, 1);
  cuda::launch_batch_norm_stats(x.as<float>(), ctx.out(0).as<float>(), v.outer, c, v.inner,
                                positive_count(ctx), stream());
}

void c_batch_norm_running_stats(const KernelContext& ctx) {
  ctx.expect_arity(3, 4,
                   "(stats, mean, var) -> (running_mean, running_var, saved_mean, saved_var)");
  const Tensor& stats = ctx.in(0);
  ctx.expect_dtype(stats, DType::kFloat32, "stats");
  if (stats.rank() != 2 || stats.shape[0] != 2) ctx.fail("stats must have shape [2, C]");
  const int64_t c = stats.shape[1];
  check_channel(ctx, ctx.in(1), c, "mean");
  check_channel(ctx, ctx.in(2), c, "var");
  float* out[4] = {nullptr, nullptr, nullptr, nullptr};
  for (size_t k = 0; k < 4; ++k) {
    if (!ctx.has_out(k)) continue;
    ctx.expect_out(k, DType::kFloat32, {c});
    out[k] = ctx.out(k).as<float>();
  }
  cuda::launch_batch_norm_running_stats(stats.as<float>(), ctx.in(1).as<float>(),
                                        ctx.in(2).as<float>(), out, c,
                                        ctx.attr_float("momentum", 0.9), stream());
}

void c_batch_norm_train(const KernelContext& ctx) {
  ctx.expect_arity(4, 1, "(X, scale, B, stats) -> Y");
  const Tensor& x = ctx.in(0);
  const int64_t c = expect_nc(ctx, x, "X");
  check_channel(ctx, ctx.in(1), c, "scale");
  check_channel(ctx, ctx.in(2), c, "B");
  check_stats(ctx, ctx.in(3), c);
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const AxisView v = axis_view(x.shape, 1);
  cuda::launch_batch_norm_train(x.as<float>(), ctx.in(1).as<float>(), ctx.in(2).as<float>(),
                                ctx.in(3).as<float>(), ctx.out(0).as<float>(), v.outer, c, v.inner,
                                ctx.attr_float("epsilon", 1e-5), stream());
}

void c_batch_norm_train_param_grad(const KernelContext& ctx) {
  ctx.expect_arity(3, 2, "(dY, X, stats) -> (dScale, dB)");
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const int64_t c = expect_nc(ctx, x, "X");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  if (dy.shape != x.shape)
    ctx.fail("dY " + shape_to_string(dy.shape) + " and X " + shape_to_string(x.shape) + " differ");
  check_stats(ctx, ctx.in(2), c);
  for (size_t k = 0; k < 2; ++k)
    if (ctx.has_out(k)) ctx.expect_out(k, DType::kFloat32, {c});
  const AxisView v = axis_view(x.shape, 1);
  cuda::launch_batch_norm_train_param_grad(dy.as<float>(), x.as<float>(), ctx.in(2).as<float>(),
                                           ctx.has_out(0) ? ctx.out(0).as<float>() : nullptr,
                                           ctx.has_out(1) ? ctx.out(1).as<float>() : nullptr,
                                           v.outer, c, v.inner, ctx.attr_float("epsilon", 1e-5),
                                           stream());
}

void c_batch_norm_train_grad(const KernelContext& ctx) {
  ctx.expect_arity(6, 1, "(dY, X, scale, stats, dScale, dB) -> dX");
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const int64_t c = expect_nc(ctx, x, "X");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  if (dy.shape != x.shape)
    ctx.fail("dY " + shape_to_string(dy.shape) + " and X " + shape_to_string(x.shape) + " differ");
  check_channel(ctx, ctx.in(2), c, "scale");
  check_stats(ctx, ctx.in(3), c);
  check_channel(ctx, ctx.in(4), c, "dScale");
  check_channel(ctx, ctx.in(5), c, "dB");
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const AxisView v = axis_view(x.shape, 1);
  cuda::launch_batch_norm_train_grad(
      dy.as<float>(), x.as<float>(), ctx.in(2).as<float>(), ctx.in(3).as<float>(),
      ctx.in(4).as<float>(), ctx.in(5).as<float>(), ctx.out(0).as<float>(), v.outer, c, v.inner,
      ctx.attr_float("epsilon", 1e-5), positive_count(ctx), stream());
}

}  // namespace planner::rt::kernels
