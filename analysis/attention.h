// The attention cores of a graph: softmax(Q K^T x scale + mask) V, with the dropout a training
// graph puts on the probabilities, as one unit. Megatron-LM's selective recomputation
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// section 5) recomputes exactly these operators in the backward pass: their outputs are the
// batch x heads x s x s tensors that dominate a long sequence's activations, and the cheapest to
// recompute per byte (docs/training.md, "Selective recomputation").
//
// A core is found from its softmax: backwards through element-wise operators (the scale, the
// mask) to the matrix product of two activations (the scores), forwards through an optional
// Dropout to the matrix product that reads the probabilities (the context). Every operator
// between the two products reads the chain and, otherwise, only tensors that are not
// activations of the chain (a scale constant, a mask), as the GPT and Llama graphs the planner
// generates and torch's exports write attention.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace planner::analysis {

struct AttentionCore {
  ir::OpId scores = ir::kNoOp;   ///< Q x K^T
  ir::OpId softmax = ir::kNoOp;  ///< the softmax over the keys
  ir::OpId context = ir::kNoOp;  ///< probabilities x V
  /// The operators from the scores to the probabilities, in order (the scores' product, scale,
  /// mask, softmax, dropout): their outputs are the core's s x s intermediates.
  std::vector<ir::OpId> ops;
};

/// The attention cores among the operators `include` accepts (null: all), in topological order
/// of their softmax. `include` lets a training graph search only its forward operators; readers
/// it rejects are ignored.
std::vector<AttentionCore> find_attention_cores(const ir::Graph& graph,
                                                const std::vector<bool>* include = nullptr);

}  // namespace planner::analysis
