// The partitioned ONNX files: each rank's program as an ONNX model (slice shapes, kernels and
// communication as nodes), and the manifest mapping every slice to its region of the original
// tensor. See docs/codegen.md for the communication domain.
#pragma once

#include <string>

#include "codegen/program.h"
#include "codegen/program_simulation.h"
#include "support/expected.h"

namespace planner::codegen {

/// The domain of the planner's communication nodes (subgroup collectives, send and recv).
inline constexpr const char* kCommDomain = "ai.planner.comm";

/// Rank `rank`'s program as a serialised ONNX ModelProto, checked with onnx::checker.
/// `opset` is the default-domain opset of the original model.
Expected<std::string> rank_onnx(const Programs& programs, int rank, int64_t opset,
                                const std::string& model_name);

/// The manifest (JSON text): ranks and their devices and files, and for every tensor of the
/// original graph its slices: rank, ONNX value name and region. With `predicted` (the compiled
/// step simulated, program_simulation.h), the step's and each rank's predicted time and peak
/// memory. Per rank, `host_fallback_kernels`: the kernel calls the launcher's `backend` ("cpu"
/// or "cuda") runs on the host through copies, by the cuda backend's own rules
/// (codegen/host_calls.h), and where there are any `host_fallback_reasons`, counted by reason.
std::string manifest_json(const Programs& programs, const std::string& model_name,
                          const ProgramCost* predicted = nullptr,
                          const std::string& backend = "cpu");

/// The ONNX value name of every buffer ("tensor[0:32,0:64]", "#<id>" appended where two
/// buffers of one rank would share it), unique within its rank's model.
std::vector<std::string> value_names(const Programs& programs);

/// Runs onnx::checker::check_model on a serialised model; the error names `what`.
Expected<void> check_onnx(const std::string& bytes, const std::string& what);

}  // namespace planner::codegen
