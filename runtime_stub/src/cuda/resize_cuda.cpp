// Resize on the device: the cpu kernel's checks (resize.cpp) on scales and sizes read on the
// host (program constants: no wait), then resize.cu.
#include "../shape_ops.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"

namespace planner::rt::kernels {

namespace {

// ctx with scales and sizes (inputs 2 and 3) viewed in host memory.
struct HostScales {
  std::vector<Tensor> inputs;
  std::vector<uint8_t> scales, sizes;
  KernelContext ctx;
  explicit HostScales(const KernelContext& c)
      : inputs(c.inputs.begin(), c.inputs.end()),
        ctx{c.op_type, c.node, c.attrs, inputs, c.outputs} {
    if (c.has_in(2)) inputs[2] = cuda::host_view(c.in(2), scales);
    if (c.has_in(3)) inputs[3] = cuda::host_view(c.in(3), sizes);
  }
};

}  // namespace

void c_resize(const KernelContext& ctx) {
  const HostScales host(ctx);
  const ResizeParams p = resize_params(host.ctx);
  cuda::launch_resize(ctx.in(0).as<float>(), ctx.out(0).as<float>(), p, cuda::context().stream);
}

void c_resize_grad(const KernelContext& ctx) {
  const HostScales host(ctx);
  const ResizeParams p = resize_grad_params(host.ctx);
  cuda::launch_resize_grad(ctx.in(0).as<float>(), ctx.out(0).as<float>(), ctx.out(0).numel(), p,
                           cuda::context().stream);
}

}  // namespace planner::rt::kernels
