// GatherElements, NegativeLogLikelihoodLoss and NLLLossGrad on the device: the cpu kernels'
// checks (loss.cpp), then loss.cu. Indices and targets are data: one out of range is reported at
// the step's end (cuda::sync), as Gather's.
#include "../shape_ops.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"

namespace planner::rt::kernels {

void c_gather_elements(const KernelContext& ctx) {
  const GatherElementsShapes g = gather_elements_shapes(ctx);
  const Tensor& ind = ctx.in(1);
  cuda::launch_gather_elements(ctx.in(0).data, ind.data, ind.dtype == DType::kInt64,
                               ctx.out(0).data, g.n, g.idx, g.data, g.axis,
                               static_cast<int>(dtype_size(ctx.in(0).dtype)), cuda::context().error,
                               cuda::context().stream);
}

void c_gather_elements_grad(const KernelContext& ctx) {
  const GatherElementsShapes g = gather_elements_grad_shapes(ctx);
  cuda::launch_gather_elements_grad(ctx.in(0).as<float>(), ctx.in(1).as<int64_t>(),
                                    ctx.out(0).as<float>(), g.n, g.idx, g.data, g.axis,
                                    cuda::context().error, cuda::context().stream);
}

void c_nll_loss(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "input");
  const NllShapes s = nll_shapes(ctx, x, ctx.in(1));
  ctx.expect_dtype(ctx.in(1), DType::kInt64, "target");
  ctx.expect_out(0, DType::kFloat32, s.none ? s.target : Shape{});
  cuda::launch_nll_loss(x.as<float>(), ctx.in(1).as<int64_t>(),
                        s.weighted ? ctx.in(2).as<float>() : nullptr, ctx.out(0).as<float>(), s.n,
                        s.c, s.inner, s.ignore, s.ignored, s.none, s.mean, cuda::context().error,
                        cuda::context().stream);
}

void c_nll_loss_grad(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& dx = ctx.out(0);
  const NllShapes s = nll_grad_shapes(ctx);
  // The device reads the targets as i64 (the cpu kernel converts i32 on the host).
  ctx.expect_dtype(ctx.in(1), DType::kInt64, "target");
  if (dx.bytes())
    PLANNER_CUDA_CHECK(cudaMemsetAsync(dx.data, 0, dx.bytes(), cuda::context().stream));
  cuda::launch_nll_loss_grad(dy.as<float>(), ctx.in(1).as<int64_t>(),
                             s.weighted ? ctx.in(2).as<float>() : nullptr, dx.as<float>(), s.n, s.c,
                             s.inner, s.ignore, s.ignored, s.none, s.mean, cuda::context().error,
                             cuda::context().stream);
}

}  // namespace planner::rt::kernels
