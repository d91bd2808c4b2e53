// The host fallback of the cuda backend: the cpu kernel on host copies of the device tensors.
#include <map>

#include "../precision_boundary.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "planner_rt/counters.h"

namespace planner::rt::kernels {

void host_fallback(const KernelContext& ctx, KernelFn fn, bool copy_inputs) {
  detail::count_host_fallback();
  // One host buffer per distinct device pointer, so in-place calls (output = input) stay so.
  std::map<const void*, std::vector<uint8_t>> host;
  auto stage = [&](const Tensor& t, bool copy) -> Tensor {
    if (!t.present()) return t;
    auto [it, fresh] = host.try_emplace(t.data);
    if (fresh) {
      it->second.resize(std::max<size_t>(t.bytes(), 1));
      if (copy && t.bytes()) copy_to_host(t, it->second.data());
    } else if (it->second.size() < t.bytes()) {
      ctx.fail("host fallback: tensors share memory with different sizes");
    }
    return Tensor(t.dtype, t.shape, it->second.data());
  };
  std::vector<Tensor> ins, outs;
  for (const Tensor& t : ctx.inputs)
    ins.push_back(copy_inputs ? stage(t, true) : Tensor(t.dtype, t.shape, nullptr));
  // Outputs are copied too: a kernel may update in place or leave parts untouched.
  for (const Tensor& t : ctx.outputs) outs.push_back(stage(t, true));
  KernelContext host_ctx{ctx.op_type, ctx.node, ctx.attrs, ins, outs};
  // 16-bit tensors (and TF32 operands) are handled as on the cpu backend.
  run_on_host(host_ctx, fn);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].present()) copy_from_host(ctx.outputs[i], outs[i].data);
}

}  // namespace planner::rt::kernels
