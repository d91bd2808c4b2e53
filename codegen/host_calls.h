// The kernel calls of a step program the cuda backend would run on the host, by the rules the
// backend itself dispatches with (planner_rt/cuda_host_calls.h): what `planner compile
// --backend cuda` reports per rank (manifest.json host_fallback_kernels) before anything runs.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "codegen/program.h"

namespace planner::codegen {

/// Why the cuda backend runs kernel step `s` on the host, or "" where a device kernel runs it
/// (also "" for a step that is not a kernel).
std::string_view cuda_host_reason(const Programs& p, const Step& s);

/// Rank `rank`'s kernel calls the cuda backend runs on the host, counted by reason.
std::map<std::string, int64_t> cuda_host_calls(const Programs& p, int rank);

}  // namespace planner::codegen
