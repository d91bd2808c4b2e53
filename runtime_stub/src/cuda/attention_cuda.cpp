// ai.planner.Attention and AttentionGrad on the device: the cpu kernels' checks (attention.h),
// then attention.cu. AttentionGrad's Δ (a double per query row) lives in the context's scratch.
#include <algorithm>

#include "../attention.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"

namespace planner::rt::kernels {

void c_attention(const KernelContext& ctx) {
  const AttentionCall c = attention_call(ctx);
  cuda::launch_attention(c.tensors, c.dims, cuda::context().stream);
}

void c_attention_grad(const KernelContext& ctx) {
  AttentionCall c = attention_grad_call(ctx);
  AttentionTensors& p = c.tensors;
  cuda::Context& dev = cuda::context();
  if (p.dq || p.dk) {
    const size_t rows = static_cast<size_t>(std::max<int64_t>(c.dims.batch * c.dims.s, 1));
    p.delta = static_cast<double*>(dev.temp[0].get(rows * sizeof(double)));
  }
  cuda::launch_attention_grad(p, c.dims, dev.stream);
}

}  // namespace planner::rt::kernels
