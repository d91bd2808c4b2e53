// ArgMax, ArgMin, Trilu, TopK, CumSum and OneHot on the device: the cpu kernels' checks
// (select.cpp), then select.cu. Trilu's k, TopK's K, CumSum's axis and OneHot's depth are read
// on the host (program constants: no wait).
#include "../shape_ops.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"

namespace planner::rt::kernels {

void c_arg_extreme(const KernelContext& ctx) {
  const ArgShapes s = arg_shapes(ctx);
  const Tensor& x = ctx.in(0);
  cuda::launch_arg_extreme(static_cast<int>(x.dtype), x.data, ctx.out(0).as<int64_t>(), s.n,
                           s.extent, s.inner, s.max, s.last, cuda::context().stream);
}

void c_trilu(const KernelContext& ctx) {
  std::vector<Tensor> inputs(ctx.inputs.begin(), ctx.inputs.end());
  std::vector<uint8_t> storage;
  if (ctx.has_in(1)) inputs[1] = cuda::host_view(ctx.in(1), storage);
  const KernelContext host{ctx.op_type, ctx.node, ctx.attrs, inputs, ctx.outputs};
  const TriluShapes s = trilu_shapes(host);
  const Tensor& x = ctx.in(0);
  cuda::launch_trilu(x.data, ctx.out(0).data, x.numel(), s.rows, s.cols, s.k, s.upper,
                     static_cast<int>(dtype_size(x.dtype)), cuda::context().stream);
}

namespace {

// ctx with input `i` viewed in host memory (a small constant the checks read).
struct HostInput {
  std::vector<Tensor> inputs;
  std::vector<uint8_t> storage;
  KernelContext ctx;
  HostInput(const KernelContext& c, size_t i)
      : inputs(c.inputs.begin(), c.inputs.end()),
        ctx{c.op_type, c.node, c.attrs, inputs, c.outputs} {
    inputs[i] = cuda::host_view(c.in(i), storage);
  }
};

}  // namespace

void c_topk(const KernelContext& ctx) {
  const HostInput host(ctx, 1);
  const TopKShapes s = topk_shapes(host.ctx);
  const Tensor& x = ctx.in(0);
  cuda::launch_topk(static_cast<int>(x.dtype), x.data, ctx.out(0).data, ctx.out(1).as<int64_t>(),
                    s.n, s.extent, s.inner, s.k, s.largest, cuda::context().stream);
}

void c_topk_grad(const KernelContext& ctx) {
  const TopKShapes s = topk_grad_shapes(ctx);
  cuda::launch_topk_grad(ctx.in(0).as<float>(), ctx.in(1).as<int64_t>(), ctx.out(0).as<float>(),
                         s.n, s.extent, s.inner, s.k, cuda::context().stream);
}

void c_cumsum(const KernelContext& ctx) {
  const HostInput host(ctx, 1);
  const CumSumShapes s = cumsum_shapes(host.ctx);
  const Tensor& x = ctx.in(0);
  cuda::launch_cumsum(static_cast<int>(x.dtype), x.data, ctx.out(0).data, s.n, s.extent, s.inner,
                      s.exclusive, s.reverse, cuda::context().stream);
}

void c_one_hot(const KernelContext& ctx) {
  const HostInput host(ctx, 1);
  const OneHotShapes s = one_hot_shapes(host.ctx);
  cuda::launch_one_hot(static_cast<int>(ctx.in(0).dtype), ctx.in(0).data, ctx.in(2).data,
                       ctx.out(0).data, s.n, s.depth, s.inner,
                       static_cast<int>(dtype_size(ctx.in(2).dtype)), cuda::context().stream);
}

}  // namespace planner::rt::kernels
