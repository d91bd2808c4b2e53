// GatherElements, NegativeLogLikelihoodLoss and its gradient (SoftmaxCrossEntropyLoss is
// imported as LogSoftmax followed by it, its ONNX function body: importers/lower_ops.h). The
// cuda backend runs them on the host (kernel_registry.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernel_util.h"
#include "shape_ops.h"

namespace planner::rt::kernels {

void k_gather_elements(const KernelContext& ctx) {
  // out[i] = data[i with its `axis` coordinate replaced by indices[i]]; indices and the output
  // share a shape, the data may be larger in every dimension.
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  if (x.rank() == 0 || ind.rank() != x.rank())
    ctx.fail("indices " + shape_to_string(ind.shape) + " must have the rank of data " +
             shape_to_string(x.shape));
  const int64_t axis = ctx.norm_axis(ctx.attr_int("axis", 0), x.rank());
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != axis && ind.shape[static_cast<size_t>(d)] > x.shape[static_cast<size_t>(d)])
      ctx.fail("indices " + shape_to_string(ind.shape) + " exceed data " +
               shape_to_string(x.shape) + " in dimension " + std::to_string(d));
  ctx.expect_out(0, x.dtype, ind.shape);
  const std::vector<int64_t> idx = checked_indices(ctx, ind, x.shape[static_cast<size_t>(axis)]);
  const size_t es = dtype_size(x.dtype);
  const size_t r = x.shape.size();
  std::vector<int64_t> strides(r, 1), at(r, 0);
  for (size_t d = r - 1; d > 0; --d) strides[d - 1] = strides[d] * x.shape[d];
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  for (size_t e = 0; e < idx.size(); ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d)
      off += (static_cast<int64_t>(d) == axis ? idx[e] : at[d]) * strides[d];
    std::memcpy(dst + e * es, src + static_cast<size_t>(off) * es, es);
    for (size_t d = r; d-- > 0;) {
      if (++at[d] < ind.shape[d]) break;
      at[d] = 0;
    }
  }
}

void k_nll_loss(const KernelContext& ctx) {
  // input [N, C, d...] (log-probabilities), target [N, d...] (class indices), weight [C]
  // optional: loss[n, d] = -input[n, target, d] * weight[target], 0 where target is
  // ignore_index; reduced by `reduction`: none, sum, or mean (the sum over the weights of the
  // targets counted).
  const Tensor& x = ctx.in(0);
  const Tensor& target = ctx.in(1);
  ctx.expect_dtype(x, DType::kFloat32, "input");
  if (x.rank() < 2) ctx.fail("input " + shape_to_string(x.shape) + " must be [N, C, d...]");
  Shape t_shape = x.shape;
  t_shape.erase(t_shape.begin() + 1);
  if (target.shape != t_shape)
    ctx.fail("target " + shape_to_string(target.shape) + " must be " + shape_to_string(t_shape));
  const int64_t n = x.shape[0], c = x.shape[1], inner = num_elements(t_shape) / std::max<int64_t>(n, 1);
  const float* w = nullptr;
  if (ctx.has_in(2)) {
    ctx.expect_dtype(ctx.in(2), DType::kFloat32, "weight");
    if (ctx.in(2).shape != Shape{c}) ctx.fail("weight must be [" + std::to_string(c) + "]");
    w = ctx.in(2).as<float>();
  }
  const std::string reduction = ctx.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("reduction '" + reduction + "' is not none, sum or mean");
  const bool ignore = ctx.has_attr("ignore_index");
  const int64_t ignored = ctx.attr_int("ignore_index", 0);
  const std::vector<int64_t> t = ctx.ints_of(target, "target");
  ctx.expect_out(0, DType::kFloat32, reduction == "none" ? t_shape : Shape{});
  const float* p = x.as<float>();
  float* y = ctx.out(0).as<float>();
  double sum = 0, weights = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t k = i * inner + j, cls = t[static_cast<size_t>(k)];
      double loss = 0, weight = 0;
      if (!(ignore && cls == ignored)) {
        if (cls < 0 || cls >= c)
          ctx.fail("target " + std::to_string(cls) + " is outside [0, " + std::to_string(c) + ")");
        weight = w ? w[cls] : 1.0;
        loss = -static_cast<double>(p[(i * c + cls) * inner + j]) * weight;
      }
      if (reduction == "none") y[k] = static_cast<float>(loss);
      sum += loss;
      weights += weight;
    }
  if (reduction == "sum") y[0] = static_cast<float>(sum);
  if (reduction == "mean")
    y[0] = weights == 0 ? std::numeric_limits<float>::quiet_NaN()
                        : static_cast<float>(sum / weights);
}

void k_nll_loss_grad(const KernelContext& ctx) {
  // (dY, target, weight?) -> dInput, shaped like the forward input: -weight[t] times dY's share
  // of each counted loss (dY itself, or dY over the weights counted for a mean) at the target's
  // class, zero elsewhere.
  const Tensor& dy = ctx.in(0);
  const Tensor& target = ctx.in(1);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dInput");
  if (dx.rank() < 2) ctx.fail("dInput " + shape_to_string(dx.shape) + " must be [N, C, d...]");
  Shape t_shape = dx.shape;
  t_shape.erase(t_shape.begin() + 1);
  if (target.shape != t_shape)
    ctx.fail("target " + shape_to_string(target.shape) + " must be " + shape_to_string(t_shape));
  const std::string reduction = ctx.attr_string("reduction", "mean");
  if (dy.shape != (reduction == "none" ? t_shape : Shape{}))
    ctx.fail("dY " + shape_to_string(dy.shape) + " does not fit reduction '" + reduction + "'");
  const int64_t n = dx.shape[0], c = dx.shape[1],
                inner = num_elements(t_shape) / std::max<int64_t>(n, 1);
  const float* w = ctx.has_in(2) ? ctx.in(2).as<float>() : nullptr;
  const bool ignore = ctx.has_attr("ignore_index");
  const int64_t ignored = ctx.attr_int("ignore_index", 0);
  const std::vector<int64_t> t = ctx.ints_of(target, "target");
  double weights = 0;
  for (int64_t cls : t)
    if (!(ignore && cls == ignored)) {
      if (cls < 0 || cls >= c)
        ctx.fail("target " + std::to_string(cls) + " is outside [0, " + std::to_string(c) + ")");
      weights += w ? w[cls] : 1.0;
    }
  float* d = dx.as<float>();
  std::fill(d, d + dx.numel(), 0.0f);
  const float* g = dy.as<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t k = i * inner + j, cls = t[static_cast<size_t>(k)];
      if (ignore && cls == ignored) continue;
      const double share = reduction == "none" ? g[k] : reduction == "sum" ? g[0] : g[0] / weights;
      d[(i * c + cls) * inner + j] = static_cast<float>(-(w ? w[cls] : 1.0) * share);
    }
}

}  // namespace planner::rt::kernels
