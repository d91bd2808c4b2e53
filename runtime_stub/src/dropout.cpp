// Dropout in training mode (ai.planner.DropoutTrain) and its gradient (DropoutGrad): the mask
// is a counter-based hash of (seed, element index in the whole tensor), so a shard of a split
// op draws exactly the elements the unsplit op would (train_math.h, shared with cuda).
#include "kernel_util.h"
#include "train_math.h"

namespace planner::rt::kernels {

DropoutLayout dropout_layout(const KernelContext& ctx, const Shape& local) {
  // A shard carries its offset and the whole tensor's shape (codegen/shard_kernel.cpp); an
  // unsplit op is its own whole.
  DropoutLayout l;
  if (local.size() > static_cast<size_t>(kDropoutMaxRank))
    ctx.fail("rank " + std::to_string(local.size()) + " is above " +
             std::to_string(kDropoutMaxRank));
  const std::vector<int64_t> offset =
      ctx.attr_ints("shard_offset", std::vector<int64_t>(local.size(), 0));
  const std::vector<int64_t> full = ctx.attr_ints("full_shape", local);
  if (offset.size() != local.size() || full.size() != local.size())
    ctx.fail("shard_offset and full_shape must have the input's rank");
  l.rank = static_cast<int>(local.size());
  for (size_t d = 0; d < local.size(); ++d) {
    if (offset[d] < 0 || offset[d] + local[d] > full[d])
      ctx.fail("shard_offset " + shape_to_string(offset) + " puts " + shape_to_string(local) +
               " outside full_shape " + shape_to_string(full));
    l.local[d] = local[d];
    l.offset[d] = offset[d];
    l.full[d] = full[d];
  }
  return l;
}

float dropout_ratio(const KernelContext& ctx) {
  const double ratio = ctx.attr_float("ratio", 0.5);
  if (!(ratio >= 0.0 && ratio < 1.0)) ctx.fail("ratio must be in [0, 1)");
  return static_cast<float>(ratio);
}

void k_dropout_train(const KernelContext& ctx) {
  ctx.expect_arity(1, 2, "(X) -> (Y, mask)");
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  ctx.expect_out(0, DType::kFloat32, x.shape);
  bool* mask = nullptr;
  if (ctx.has_out(1)) {
    ctx.expect_out(1, DType::kBool, x.shape);
    mask = ctx.out(1).as<bool>();
  }
  const DropoutLayout l = dropout_layout(ctx, x.shape);
  const uint64_t seed = static_cast<uint64_t>(ctx.attr_int("seed", 0));
  const float ratio = dropout_ratio(ctx);
  const float* xp = x.as<float>();
  float* y = ctx.out(0).as<float>();
  for (int64_t e = 0; e < x.numel(); ++e) dropout_train_element(l, seed, ratio, xp, y, mask, e);
}

void k_dropout_grad(const KernelContext& ctx) {
  ctx.expect_arity(2, 1, "(dY, mask) -> dX");
  const Tensor& dy = ctx.in(0);
  const Tensor& mask = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(mask, DType::kBool, "mask");
  if (mask.shape != dy.shape)
    ctx.fail("mask " + shape_to_string(mask.shape) + " and dY " + shape_to_string(dy.shape) +
             " differ");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  const float scale = 1.0f / (1.0f - dropout_ratio(ctx));
  const float* g = dy.as<float>();
  const bool* m = mask.as<bool>();
  float* dx = ctx.out(0).as<float>();
  for (int64_t e = 0; e < dy.numel(); ++e) dx[e] = m[e] ? g[e] * scale : 0.0f;
}

}  // namespace planner::rt::kernels
