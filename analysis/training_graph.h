// The training graph: the forward graph extended with its backward pass and the optimizer
// update, with each backward operator tagged by the forward operator it belongs to.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::analysis {

/// Which optimizer updates the parameters, and so how much state it keeps per parameter.
enum class Optimizer {
  kSgd,       ///< w -= lr * g; no state
  kMomentum,  ///< one velocity tensor per parameter
  kAdam,      ///< two moment tensors per parameter
};

/// Which forward activations the backward pass reads as saved, and which it recomputes
/// (analysis/recompute.h).
enum class Recompute : uint8_t {
  kNone,       ///< every activation the backward pass reads is kept from the forward pass
  kAll,        ///< only checkpoints are kept; the rest is recomputed segment by segment
  kSelective,  ///< the attention cores' s x s intermediates are recomputed, the rest kept
  kOps,        ///< torchtitan's op-level selective checkpointing: attention and every other
               ///< weight product kept, the rest recomputed (analysis/recompute.h)
};

std::string_view recompute_name(Recompute recompute);
std::optional<Recompute> recompute_from_name(std::string_view name);

/// Options for build_training_graph.
struct TrainingOptions {
  Optimizer optimizer = Optimizer::kSgd;
  double learning_rate = 0.01;  ///< recorded on the update operators
  Recompute recompute = Recompute::kNone;
  /// Sum a parameter's gradient parts (a token embedding tied to the LM head) in the optimizer
  /// step, once per step, instead of in the backward pass: for pipelined steps, where the parts
  /// are made on different stages and would otherwise meet, and be reduced over the replicas,
  /// every micro-batch (docs/training.md, "Gradients"). Without stages the backward sum is
  /// cheaper: one reduction of the summed gradient rather than one per part.
  bool sum_parameter_parts_once = false;
  /// Give an LM head tied to the token embedding its own copy of the table, both copies updated
  /// with the sum of their gradients in the optimizer step (analysis/tied_copies.h): for
  /// pipelined steps, as Megatron-LM keeps the embedding on its first and last stage, so the
  /// last stage does not receive the table every micro-batch.
  bool copy_tied_embeddings = false;
  /// Recompute::kAll on a step cut into this many pipeline runs (stages x virtual stages, more
  /// than the stages alone): checkpoints evenly spaced, every k-th forward cut with k dividing
  /// the cuts per run (analysis/recompute.h), so the runs can end at checkpoints and be even.
  /// 0: Chen et al.'s spacing.
  int checkpoint_runs = 0;
};

/// The phase an operator runs in within one training step.
enum class Phase : uint8_t {
  kForward,
  kBackward,
  kUpdate,
  kRecompute,  ///< a forward operator run again in the backward pass (analysis/recompute.h)
};

std::string_view phase_name(Phase phase);

/// A training step as one graph, plus the side tables later stages need.
struct TrainingGraph {
  ir::Graph graph;
  /// Per op: its phase.
  std::vector<Phase> op_phase;
  /// Per op: the forward op it was derived from (Tofu's operator group, section 5.1); forward
  /// ops map to themselves. Gradient accumulation and updates join the group of the forward op
  /// that produced (or first consumed) the tensor.
  std::vector<ir::OpId> op_group;
  /// Per tensor: its gradient tensor, or kNoTensor.
  std::vector<ir::TensorId> grad_of_tensor;
  /// Per tensor: the forward tensor it is the gradient of, or kNoTensor.
  std::vector<ir::TensorId> tensor_of_grad;
  /// Per tensor: the forward tensor it recomputes (outputs of kRecompute ops), or kNoTensor.
  std::vector<ir::TensorId> recomputes;
  /// Operator types that had no gradient rule: their backward is one opaque operator each,
  /// which the analysis keeps whole.
  std::vector<std::string> opaque_backward_types;
};

/// Builds the training step for `forward`. The step minimises 0.5 * sum(y^2) over each graph
/// output y: an ai.planner.LossGrad operator turns each output into its gradient
/// "grad:<output>" (= y), standing in for the user's loss.
/// Backward operators are standard ONNX operators where one fits (MatMul, Gemm, Transpose,
/// ReduceSum, Reshape, Mul, Split, Concat …) and otherwise operators of the "ai.planner"
/// domain (ConvGradData, SoftmaxGrad, LayerNormGrad, LSTMGradData …, documented in
/// docs/training.md), all with TDL descriptions. Errors name the file and node.
Expected<TrainingGraph> build_training_graph(const ir::Graph& forward,
                                             const TrainingOptions& options,
                                             const std::string& source = "");

/// The domain of the planner's own backward and update operators.
inline constexpr const char* kPlannerDomain = "ai.planner";

}  // namespace planner::analysis
