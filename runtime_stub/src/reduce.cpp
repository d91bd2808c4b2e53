// ReduceMean/Sum/Max/Min (axes as attribute or input, keepdims, noop_with_empty_axes) and
// ReduceGrad (axes as a normalised attribute), which broadcasts the output gradient back.
#include <algorithm>
#include <limits>

#include "kernel_util.h"

namespace planner::rt::kernels {

namespace {

enum class Red { kSum, kMean, kMax, kMin };

Red red_of(const KernelContext& ctx, std::string_view t) {
  if (t == "ReduceSum") return Red::kSum;
  if (t == "ReduceMean") return Red::kMean;
  if (t == "ReduceMax") return Red::kMax;
  if (t == "ReduceMin") return Red::kMin;
  ctx.fail("unsupported reduction '" + std::string(t) + "'");
}

struct ReduceShapes {
  bool identity = false;  // noop_with_empty_axes=1 and no axes
  Shape kept;             // the input shape with reduced axes set to 1
  Shape out;              // kept, or without the reduced axes when keepdims=0
  int64_t count = 1;      // elements folded into each output
};

// `axes_input` is the tensor holding the axes (opset 13 ReduceSum, opset 18 others) or null.
ReduceShapes reduce_shapes(const KernelContext& ctx, const Shape& x, const Tensor* axes_input) {
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes_input && axes_input->present()) axes = ctx.ints_of(*axes_input, "axes");
  const bool keep = ctx.attr_int("keepdims", 1) != 0;
  ReduceShapes s;
  const int64_t r = static_cast<int64_t>(x.size());
  std::vector<bool> reduced(x.size(), false);
  if (axes.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0) {
      s.identity = true;
      s.kept = s.out = x;
      return s;
    }
    std::fill(reduced.begin(), reduced.end(), true);
  }
  for (int64_t a : axes) {
    int64_t n = ctx.norm_axis(a, r);
    if (reduced[static_cast<size_t>(n)] && !axes.empty())
      ctx.fail("axis " + std::to_string(a) + " is repeated");
    reduced[static_cast<size_t>(n)] = true;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    s.kept.push_back(reduced[i] ? 1 : x[i]);
    if (reduced[i]) s.count *= x[i];
    if (!reduced[i] || keep) s.out.push_back(reduced[i] ? 1 : x[i]);
  }
  return s;
}

}  // namespace

void k_reduce(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Red red = red_of(ctx, ctx.op_type);
  ReduceShapes s = reduce_shapes(ctx, x.shape, ctx.has_in(1) ? &ctx.inputs[1] : nullptr);
  ctx.expect_out(0, x.dtype, s.out);
  const Tensor& y = ctx.out(0);
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kInt64 && x.dtype != DType::kInt32)
    ctx.fail("unsupported input type " + std::string(dtype_name(x.dtype)));
  if (s.identity) {
    std::memcpy(y.data, x.data, x.bytes());
    return;
  }
  const int64_t n = y.numel();
  // Accumulate in double, in the input's row-major order: a fixed order for every run.
  std::vector<double> acc(static_cast<size_t>(n),
                          red == Red::kMax   ? -std::numeric_limits<double>::infinity()
                          : red == Red::kMin ? std::numeric_limits<double>::infinity()
                                             : 0.0);
  broadcast_loop<1>(x.shape, {s.kept}, [&](int64_t i, const std::array<int64_t, 1>& off) {
    double v = load_as_double(x, i);
    double& a = acc[static_cast<size_t>(off[0])];
    if (red == Red::kMax)
      a = (std::isnan(v) || v > a) ? v : a;
    else if (red == Red::kMin)
      a = (std::isnan(v) || v < a) ? v : a;
    else
      a += v;
  });
  for (int64_t o = 0; o < n; ++o) {
    double v = acc[static_cast<size_t>(o)];
    if (red == Red::kMean) v /= static_cast<double>(std::max<int64_t>(s.count, 1));
    store_from_double(y, o, v);
  }
}

void k_reduce_grad(const KernelContext& ctx) {
  // Inputs (dY, X[, Y]): Y (the forward output) for ReduceMax/Min only. Attributes op, keepdims
  // and axes, the reduced axes normalised by the training graph: non-negative, strictly
  // increasing, every axis when the forward op reduced all of them; an empty list means the
  // forward op reduced nothing (noop_with_empty_axes), so dX = dY. Max/Min split the gradient
  // evenly among the elements equal to the extremum.
  const std::string op = ctx.attr_string("op", "");
  const Red red = red_of(ctx, op);
  const bool extremum = red == Red::kMax || red == Red::kMin;
  const size_t want_in = extremum ? 3 : 2;
  size_t n_in = ctx.inputs.size();
  while (n_in > 0 && !ctx.inputs[n_in - 1].present()) --n_in;
  if (n_in != want_in)
    ctx.fail("op=" + op + " takes " + std::to_string(want_in) + " inputs (dY, X" +
             (extremum ? ", Y" : "") + "), got " + std::to_string(n_in) +
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
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i));
    if (!reduced || keep) out.push_back(reduced ? 1 : x.shape[i]);
  }
  if (axes.empty()) out = x.shape;  // nothing was reduced: keepdims does not apply
  if (dy.shape != out)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " + shape_to_string(out));
  ctx.expect_out(0, DType::kFloat32, x.shape);
  const float* g = dy.as<float>();
  const float* xp = x.as<float>();
  float* dx = ctx.out(0).as<float>();
  if (!extremum) {
    const double scale =
        red == Red::kMean ? 1.0 / static_cast<double>(std::max<int64_t>(count, 1)) : 1.0;
    broadcast_loop<1>(x.shape, {kept}, [&](int64_t i, const std::array<int64_t, 1>& off) {
      dx[i] = static_cast<float>(g[off[0]] * scale);
    });
    return;
  }
  const Tensor& y = ctx.in(2);
  ctx.expect_dtype(y, DType::kFloat32, "Y");
  if (y.shape != dy.shape)
    ctx.fail("Y has shape " + shape_to_string(y.shape) + ", expected " + shape_to_string(dy.shape));
  const float* yp = y.as<float>();
  std::vector<int64_t> ties(static_cast<size_t>(dy.numel()), 0);
  broadcast_loop<1>(x.shape, {kept}, [&](int64_t i, const std::array<int64_t, 1>& off) {
    if (xp[i] == yp[off[0]]) ++ties[static_cast<size_t>(off[0])];
  });
  broadcast_loop<1>(x.shape, {kept}, [&](int64_t i, const std::array<int64_t, 1>& off) {
    dx[i] = xp[i] == yp[off[0]] ? g[off[0]] / static_cast<float>(ties[static_cast<size_t>(off[0])])
                                : 0.0f;
  });
}

}  // namespace planner::rt::kernels
