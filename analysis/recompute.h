// Activation recomputation (gradient checkpointing) as a pass over the training graph: the
// backward pass reads forward activations from clones of their forward operators, run again in
// the backward pass, instead of keeping them from the forward pass. Only checkpoints are kept.
//
// Checkpoints follow Chen et al. 2016 ("Training Deep Nets with Sublinear Memory Cost",
// section 4.1): the forward pass, in topological order, has cut points where a single
// activation carries everything later operators need (a residual stream between transformer
// blocks, a ResNet block's output); tensors every part of the pass reads (attention masks)
// are kept and ignored when finding cuts. Walking the cuts in order, one becomes a checkpoint
// whenever the activations saved since the previous checkpoint reach sqrt(saved bytes x mean
// cut bytes), the budget that balances checkpoint memory against the largest segment
// recomputed at once (about one block per segment in a transformer).
//
// Everything the backward pass reads that is not kept is recomputed: each forward operator it
// needs gets a clone (phase kRecompute, named "recompute/<name>", outputs "<name>:recomputed")
// placed in the step's order right before the first backward operator that needs it, reading
// kept tensors and other clones. A clone also waits for the operator before it (ir::Op::after),
// so the simulator and the compiled program both run it when the backward pass reaches its
// segment, not as soon as its inputs exist. Clones compute what their originals computed
// (Dropout draws its mask from its seed and the element index, docs/runtime.md), so a step
// with recomputation updates the parameters exactly as one without.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/training_graph.h"
#include "support/expected.h"

namespace planner::analysis {

/// What apply_recompute did.
struct RecomputeSummary {
  int checkpoints = 0;           ///< cut tensors kept as checkpoints
  int cloned_ops = 0;            ///< forward operators run again in the backward pass
  int64_t recomputed_bytes = 0;  ///< bytes of the forward activations recomputed
  int64_t checkpoint_bytes = 0;  ///< bytes of the checkpoints
  int attention_cores = 0;       ///< kSelective: the attention cores recomputed
};

/// A point of the forward pass where a single activation carries everything later forward
/// operators read (masks read all through the pass aside): after forward operator `position`
/// (counting forward operators in topological order), `tensor` alone is alive.
struct ForwardCut {
  int position = 0;
  ir::TensorId tensor = ir::kNoTensor;
};

/// The forward pass's cuts, in order (the candidates for checkpoints, and for pipeline stage
/// boundaries: search/pipeline.h).
std::vector<ForwardCut> forward_cuts(const TrainingGraph& training);

/// Rewrites `training` (built with Recompute::kNone) so its backward pass recomputes what
/// `mode` says: every saved activation except checkpoints (kAll), or the attention cores'
/// intermediates only (kSelective: the scores, scaled and masked scores, probabilities and
/// their dropout, analysis/attention.h; a graph without attention recomputes nothing). Op ids
/// change (clones are inserted in the order they run); tensor ids of the original graph stay,
/// clones' tensors are appended. training.recomputes maps each clone tensor to its original. Errors
/// name `source`.
///
/// kAll with `checkpoint_runs` R > 0 (a pipeline of R model chunks, virtual stages): the
/// checkpoints are every k-th cut, k the divisor of (cuts / R) nearest the spacing Chen et
/// al.'s budget would give, so each chunk can hold a whole number of segments (Megatron-LM's
/// uniform method checkpoints every layer for the same reason).
Expected<RecomputeSummary> apply_recompute(TrainingGraph& training, Recompute mode,
                                           const std::string& source, int checkpoint_runs = 0);

}  // namespace planner::analysis
