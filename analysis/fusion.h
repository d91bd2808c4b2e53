// Kernel fusion as a framework runs it: which neighbouring operators run as one kernel, so
// that the tensors they pass each other never reach memory (--framework; docs/cost-model.md,
// "Fused kernels").
//
// An ONNX graph spells out what frameworks run fused: GELU as five element-wise operators,
// scale, mask and softmax as three passes over the attention scores, a bias, dropout and
// residual add as three more. Priced one kernel each, element-wise work is a third of an LLM
// step on an A100; as Megatron-LM runs it, a fraction of that. The fusion pass marks, per
// operator, the inputs and outputs that stay inside a fused kernel (ir::Op::fused_reads,
// fused_writes) and whether it shares another operator's launch (fused_launch). The pricers
// (the lowering's shard times and the compiled step's kernels) leave those bytes and launches
// out. The runtime still runs every operator on its own: fusion changes what a step is
// predicted to cost on the framework named, not what the launcher runs.
#pragma once

#include <optional>
#include <string_view>

#include "analysis/training_graph.h"
#include "ir/graph.h"

namespace planner::analysis {

/// The framework whose kernels a step is priced as.
enum class Framework : uint8_t {
  kNone,          ///< every operator of the graph is one kernel (the default)
  kTorch,         ///< eager PyTorch: bias in the GEMM's epilogue, GELU as one kernel
  kMegatron,      ///< Megatron-LM: torch's, plus fused bias-GELU, scale-mask-softmax and
                  ///< bias-dropout-add, forward and backward
  kTorchCompile,  ///< torch.compile (Inductor): every chain of element-wise, softmax and
                  ///< normalisation operators between two GEMMs is one kernel
};

std::string_view framework_name(Framework f);
std::optional<Framework> framework_from_name(std::string_view name);
/// "none, torch, megatron, torch-compile", for help and errors.
std::string_view framework_choices();

/// What fuse_kernels did.
struct FusionSummary {
  int kernels = 0;          ///< fused kernels of two or more operators
  int fused_ops = 0;        ///< operators inside them
  int64_t saved_bytes = 0;  ///< bytes the step no longer moves (whole tensors, once each)
};

/// Marks `graph`'s operators as `framework` fuses them (clearing earlier marks). `training`
/// (the step's phases and each operator's forward operator) lets a backward kernel recompute
/// in registers what its forward kernel kept there, as fused frameworks' backward kernels do;
/// null for an inference graph. Deterministic: a walk in topological order.
FusionSummary fuse_kernels(ir::Graph& graph, const TrainingGraph* training, Framework framework);

}  // namespace planner::analysis
