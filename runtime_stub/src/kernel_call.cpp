// The runtime's description of a kernel call for the cuda backend's host rules.
#include "kernel_call.h"

namespace planner::rt::kernels {

int64_t ContextAttributes::get_int(std::string_view name, int64_t fallback) const {
  return ctx_.attr_int(std::string(name), fallback);
}

std::string ContextAttributes::get_string(std::string_view name) const {
  return ctx_.attr_string(std::string(name), "");
}

std::vector<int64_t> ContextAttributes::get_ints(std::string_view name) const {
  return ctx_.attr_ints(std::string(name));
}

KernelCall kernel_call(const KernelContext& ctx, std::string_view domain,
                       const ContextAttributes& attributes) {
  KernelCall call;
  call.domain = domain;
  call.op_type = ctx.op_type;
  call.attributes = &attributes;
  auto describe = [](const Tensor& t) {
    return t.present() ? CallTensor{static_cast<int32_t>(t.dtype), t.shape} : CallTensor{};
  };
  for (const Tensor& t : ctx.inputs) call.inputs.push_back(describe(t));
  for (const Tensor& t : ctx.outputs) call.outputs.push_back(describe(t));
  return call;
}

std::string_view cuda_host_reason(const KernelContext& ctx, std::string_view domain) {
  const ContextAttributes attributes(ctx);
  return planner::rt::cuda_host_reason(kernel_call(ctx, domain, attributes));
}

}  // namespace planner::rt::kernels

namespace planner::rt {

std::string_view cuda_host_reason(std::string_view domain, std::string_view op_type,
                                  const Attributes& attrs, std::span<const Tensor> inputs,
                                  std::span<const Tensor> outputs) {
  const kernels::KernelContext ctx{op_type, "", attrs, inputs, outputs};
  return kernels::cuda_host_reason(ctx, domain);
}

}  // namespace planner::rt
