// The operators the cuda backend runs on the host as a whole (inputs copied back, the cpu
// kernel run, outputs copied over): the kernel table's kHost rows, listed here so that
// `planner compile` can count them per rank without linking the runtime
// (tests/runtime/copy_plan_test.cpp checks this list against the table). None today: every
// operator has device kernels. A native kernel still hands the host a call it does not cover,
// counted at run time (the launcher's --report, host_fallback_kernels): an integer input to an
// arithmetic kernel, a tensor of more than 8 dimensions, the casts launch_cast lacks, and
// pooling windows wider than 32 along an axis.
#pragma once

#include <array>
#include <string_view>

namespace planner::rt {

struct HostOp {
  std::string_view domain, op_type;
};

inline constexpr std::array<HostOp, 0> kCudaHostOps = {};

/// Whether the cuda backend runs (domain, op_type) through the host fallback ("" = ai.onnx).
constexpr bool cuda_runs_on_host(std::string_view domain, std::string_view op_type) {
  if (domain == "ai.onnx") domain = "";
  for (const HostOp& h : kCudaHostOps)
    if (h.domain == domain && h.op_type == op_type) return true;
  return false;
}

}  // namespace planner::rt
