// A kernel call as the cuda backend's host rules see it (planner_rt/cuda_host_calls.h): the
// runtime's side of the description `planner compile` builds from a step.
#pragma once

#include <string_view>

#include "kernel_util.h"
#include "planner_rt/cuda_host_calls.h"

namespace planner::rt::kernels {

/// The attributes of a KernelContext through the rules' interface.
class ContextAttributes final : public CallAttributes {
 public:
  explicit ContextAttributes(const KernelContext& ctx) : ctx_(ctx) {}
  int64_t get_int(std::string_view name, int64_t fallback) const override;
  std::string get_string(std::string_view name) const override;
  std::vector<int64_t> get_ints(std::string_view name) const override;

 private:
  const KernelContext& ctx_;
};

/// The call `ctx` makes of (domain, ctx.op_type); `attributes` must outlive the result.
KernelCall kernel_call(const KernelContext& ctx, std::string_view domain,
                       const ContextAttributes& attributes);

/// Why the cuda backend runs this call on the host ("" where the device runs it).
std::string_view cuda_host_reason(const KernelContext& ctx, std::string_view domain);

}  // namespace planner::rt::kernels
