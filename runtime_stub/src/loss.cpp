// GatherElements, NegativeLogLikelihoodLoss and its gradient (SoftmaxCrossEntropyLoss is
// imported as LogSoftmax followed by it, its ONNX function body: importers/lower_ops.h), with
// loss_math.h's bodies, which the cuda kernels (cuda/loss.cu) run too.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernel_util.h"
#include "loss_math.h"
#include "shape_ops.h"

namespace planner::rt::kernels {

namespace {

SmallShape small_shape(const KernelContext& ctx, const Shape& s) {
  if (s.size() > 8) ctx.fail("more than 8 dimensions: " + shape_to_string(s));
  SmallShape out;
  out.rank = static_cast<int>(s.size());
  for (size_t d = 0; d < s.size(); ++d) out.d[d] = s[d];
  return out;
}

}  // namespace

GatherElementsShapes gather_elements_shapes(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  if (x.rank() == 0 || ind.rank() != x.rank())
    ctx.fail("indices " + shape_to_string(ind.shape) + " must have the rank of data " +
             shape_to_string(x.shape));
  if (ind.dtype != DType::kInt64 && ind.dtype != DType::kInt32)
    ctx.fail("indices must be i64 or i32");
  GatherElementsShapes g;
  g.axis = static_cast<int>(ctx.norm_axis(ctx.attr_int("axis", 0), x.rank()));
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != g.axis && ind.shape[static_cast<size_t>(d)] > x.shape[static_cast<size_t>(d)])
      ctx.fail("indices " + shape_to_string(ind.shape) + " exceed data " +
               shape_to_string(x.shape) + " in dimension " + std::to_string(d));
  ctx.expect_out(0, x.dtype, ind.shape);
  g.data = small_shape(ctx, x.shape);
  g.idx = small_shape(ctx, ind.shape);
  g.n = ind.numel();
  return g;
}

void k_gather_elements(const KernelContext& ctx) {
  // out[i] = data[i with its `axis` coordinate replaced by indices[i]].
  const GatherElementsShapes g = gather_elements_shapes(ctx);
  const Tensor& x = ctx.in(0);
  const std::vector<int64_t> idx = ctx.ints_of(ctx.in(1), "indices");
  const size_t es = dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  for (int64_t e = 0; e < g.n; ++e) {
    const int64_t off =
        gather_elements_source(e, g.idx, g.data, g.axis, idx[static_cast<size_t>(e)]);
    if (off < 0)
      ctx.fail("index " + std::to_string(idx[static_cast<size_t>(e)]) +
               " is out of range for extent " + std::to_string(g.data.d[g.axis]));
    std::memcpy(dst + static_cast<size_t>(e) * es, src + static_cast<size_t>(off) * es, es);
  }
}

GatherElementsShapes gather_elements_grad_shapes(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  if (ind.dtype != DType::kInt64) ctx.fail("indices must be i64");
  if (dx.rank() == 0 || dy.shape != ind.shape || dx.rank() != ind.rank())
    ctx.fail("dY " + shape_to_string(dy.shape) + " and indices " + shape_to_string(ind.shape) +
             " do not fit dX " + shape_to_string(dx.shape));
  GatherElementsShapes g;
  g.axis = static_cast<int>(ctx.norm_axis(ctx.attr_int("axis", 0), dx.rank()));
  for (int64_t d = 0; d < dx.rank(); ++d)
    if (d != g.axis && ind.shape[static_cast<size_t>(d)] != dx.shape[static_cast<size_t>(d)])
      ctx.fail("indices " + shape_to_string(ind.shape) + " differ from dX " +
               shape_to_string(dx.shape) + " outside the axis");
  g.data = small_shape(ctx, dx.shape);
  g.idx = small_shape(ctx, ind.shape);
  g.n = 1;  // lines along the axis: the other dimensions' product
  for (int64_t d = 0; d < dx.rank(); ++d)
    if (d != g.axis) g.n *= dx.shape[static_cast<size_t>(d)];
  return g;
}

void k_gather_elements_grad(const KernelContext& ctx) {
  // dX[..., indices[j], ...] += dY[..., j, ...] along `axis`, zero elsewhere.
  const GatherElementsShapes g = gather_elements_grad_shapes(ctx);
  for (int64_t line = 0; line < g.n; ++line)
    if (!gather_elements_grad_line(ctx.in(0).as<float>(), ctx.in(1).as<int64_t>(),
                                   ctx.out(0).as<float>(), line, g.idx, g.data, g.axis))
      ctx.fail("an index is out of range for extent " + std::to_string(g.data.d[g.axis]));
}

NllShapes nll_shapes(const KernelContext& ctx, const Tensor& input, const Tensor& target) {
  // input (or dInput) [N, C, d...], target [N, d...], weight [C] optional.
  if (input.rank() < 2) ctx.fail("input " + shape_to_string(input.shape) + " must be [N, C, d...]");
  Shape t_shape = input.shape;
  t_shape.erase(t_shape.begin() + 1);
  if (target.shape != t_shape)
    ctx.fail("target " + shape_to_string(target.shape) + " must be " + shape_to_string(t_shape));
  NllShapes s;
  s.target = t_shape;
  s.n = input.shape[0];
  s.c = input.shape[1];
  s.inner = num_elements(t_shape) / std::max<int64_t>(s.n, 1);
  if (ctx.has_in(2)) {
    ctx.expect_dtype(ctx.in(2), DType::kFloat32, "weight");
    if (ctx.in(2).shape != Shape{s.c}) ctx.fail("weight must be [" + std::to_string(s.c) + "]");
    s.weighted = true;
  }
  const std::string reduction = ctx.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("reduction '" + reduction + "' is not none, sum or mean");
  s.none = reduction == "none";
  s.mean = reduction == "mean";
  s.ignore = ctx.has_attr("ignore_index");
  s.ignored = ctx.attr_int("ignore_index", 0);
  return s;
}

namespace {

[[noreturn]] void bad_target(const KernelContext& ctx, const std::vector<int64_t>& t, int64_t c) {
  for (int64_t cls : t)
    if (cls < 0 || cls >= c)
      ctx.fail("target " + std::to_string(cls) + " is outside [0, " + std::to_string(c) + ")");
  ctx.fail("a target is outside the classes");
}

}  // namespace

void k_nll_loss(const KernelContext& ctx) {
  // loss[n, d] = -input[n, target, d] * weight[target], 0 where target is ignore_index; reduced
  // by `reduction`: none, sum, or mean (over the weights of the targets counted).
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "input");
  const NllShapes s = nll_shapes(ctx, x, ctx.in(1));
  const std::vector<int64_t> t = ctx.ints_of(ctx.in(1), "target");
  const float* w = s.weighted ? ctx.in(2).as<float>() : nullptr;
  ctx.expect_out(0, DType::kFloat32, s.none ? s.target : Shape{});
  float* y = ctx.out(0).as<float>();
  int bad = 0;
  if (!s.none) {
    y[0] = nll_reduced(x.as<float>(), t.data(), w, s.n, s.c, s.inner, s.ignore, s.ignored, s.mean,
                       &bad);
  } else {
    for (int64_t k = 0; k < s.n * s.inner; ++k) {
      double loss = 0, weight = 0;
      if (!nll_term(x.as<float>(), w, t[static_cast<size_t>(k)], k / s.inner, k % s.inner, s.c,
                    s.inner, s.ignore, s.ignored, &loss, &weight))
        bad = 1;
      y[k] = static_cast<float>(loss);
    }
  }
  if (bad) bad_target(ctx, t, s.c);
}

NllShapes nll_grad_shapes(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dInput");
  const NllShapes s = nll_shapes(ctx, dx, ctx.in(1));
  if (dy.shape != (s.none ? s.target : Shape{}))
    ctx.fail("dY " + shape_to_string(dy.shape) + " does not fit the reduction");
  return s;
}

void k_nll_loss_grad(const KernelContext& ctx) {
  // (dY, target, weight?) -> dInput, shaped like the forward input: -weight[t] times dY's share
  // of each counted loss (dY itself, or dY over the weights counted for a mean) at the target's
  // class, zero elsewhere.
  const Tensor& dy = ctx.in(0);
  const Tensor& dx = ctx.out(0);
  const NllShapes s = nll_grad_shapes(ctx);
  const std::vector<int64_t> t = ctx.ints_of(ctx.in(1), "target");
  const float* w = s.weighted ? ctx.in(2).as<float>() : nullptr;
  const double total =
      s.mean ? nll_weights(t.data(), w, s.n * s.inner, s.c, s.ignore, s.ignored) : 1;
  float* d = dx.as<float>();
  std::fill(d, d + dx.numel(), 0.0f);
  const float* g = dy.as<float>();
  for (int64_t k = 0; k < s.n * s.inner; ++k) {
    const double share = s.none ? g[k] : s.mean ? g[0] / total : g[0];
    if (!nll_grad_term(t.data(), w, d, k, s.c, s.inner, s.ignore, s.ignored, share))
      bad_target(ctx, t, s.c);
  }
}

}  // namespace planner::rt::kernels
