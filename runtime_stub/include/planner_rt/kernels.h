// The kernel library: ONNX and ai.planner operators on the CPU, looked up by (domain, op type).
//
// Every kernel takes input views and pre-allocated output views: shapes are static, so the
// launcher allocates outputs once from the plan, and a kernel only checks that the shapes it
// would produce are the ones it was given. Kernels are deterministic: fixed summation order,
// no threads of their own (BLAS runs single-threaded per rank; see docs/runtime.md).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "planner_rt/tensor.h"

namespace planner::rt {

/// An operator attribute, as ONNX has them: int, float (kept as double), string, and lists.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;
/// Attributes by name; sorted, so their text form is canonical.
using Attributes = std::map<std::string, AttrValue>;

/// The domain of the planner's own operators (backward and optimizer ops).
inline constexpr std::string_view kPlannerDomain = "ai.planner";

/// Runs operator (`domain`, `op_type`) with `attrs` on `inputs`, writing `outputs`.
/// Absent optional inputs/outputs are default-constructed Tensors; trailing ones may be left
/// out. The domain "" and "ai.onnx" are the same. `node` names the operator in messages.
/// Throws Error ("node 'x' (Conv): input 1 has shape [..], expected [..]") for an unknown
/// operator, a wrong dtype or shape, or an unsupported attribute value.
void run_kernel(std::string_view domain, std::string_view op_type, const Attributes& attrs,
                std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                std::string_view node = "");

/// Runs the cpu kernel of (domain, op_type) on tensors in host memory, on every backend: the
/// reference the cuda backend's kernels are checked against (and what its host fallback runs).
/// Same contract and errors as run_kernel.
void run_cpu_kernel(std::string_view domain, std::string_view op_type, const Attributes& attrs,
                    std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    std::string_view node = "");

/// Whether a kernel is registered for (domain, op_type).
bool has_kernel(std::string_view domain, std::string_view op_type);

/// Every registered kernel as "domain.op_type" ("" domain printed as "ai.onnx"), sorted.
std::vector<std::string> kernel_names();

/// How this build runs operator (domain, op_type), as the kernel table says: "cpu" on the cpu
/// backend; on cuda "cuda" (the library's own kernels), "cublas", "cudnn", or "host" (the
/// fallback: inputs copied to the host, the cpu kernel run, outputs copied back). Native cuda
/// kernels hand input types they do not cover (usually integers) to the host fallback too.
/// "" when there is no kernel.
std::string_view kernel_implementation(std::string_view domain, std::string_view op_type);

/// How the cuda backend runs (domain, op_type), whichever backend this build is: "cuda",
/// "cublas", "cudnn" or "host" (the kernel table's column; "" when there is no kernel).
std::string_view cuda_implementation(std::string_view domain, std::string_view op_type);

/// Why the cuda backend runs this call on the host by the rules it dispatches with
/// (planner_rt/cuda_host_calls.h, the ones `planner compile` counts), whichever backend this
/// build is; "" where its device kernel takes the call. Reads only types, shapes and attributes.
std::string_view cuda_host_reason(std::string_view domain, std::string_view op_type,
                                  const Attributes& attrs, std::span<const Tensor> inputs,
                                  std::span<const Tensor> outputs);

/// Sets the number of threads BLAS may use inside one rank (default 1, which keeps results
/// independent of scheduling and avoids oversubscribing when ranks are threads).
void set_blas_threads(int threads);

}  // namespace planner::rt
