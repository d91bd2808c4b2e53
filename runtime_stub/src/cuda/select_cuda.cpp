// ArgMax, ArgMin and Trilu on the device: the cpu kernels' checks (select.cpp), then select.cu.
// Trilu's k is read on the host (a program constant: no wait).
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

}  // namespace planner::rt::kernels
