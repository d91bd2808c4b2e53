// Attention as one operator (--attention fused): each attention core of a forward graph,
// softmax(Q K^T x scale + mask) V, becomes one ai.planner.Attention (tdl/ops/attention.tdl),
// run as FlashAttention runs it (Dao et al., NeurIPS 2022): no batch x heads x S x T tensor is
// written, the backward pass keeps Y and each query row's log-sum-exp and recomputes the
// scores. This is what PyTorch's scaled_dot_product_attention, Megatron-Core's
// --use-flash-attn / Transformer Engine and torchtitan run; the graph as exported
// ("materialized") is what a framework without a fused kernel runs.
//
// A core is fused when its shape is what such a kernel computes: the scores one product of
// two activations with the same leading dimensions as V, then any number of multiplications
// or divisions by a scalar constant (the scale) and at most one addition of a mask, the
// softmax over the last axis, and the product with V. The mask is recognised as causal where
// it is a constant (or Trilu<upper=1, k=1> of a constant) of 0 on and below the diagonal and
// at most -1e4 above it; another [S, T] mask is passed to the kernel as an additive bias.
// Cores with dropout on the probabilities stay materialized (the fused kernel draws no
// dropout mask here), as do cores of another shape; fuse_attention says which and why.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::analysis {

/// What fuse_attention did.
struct AttentionFusion {
  int fused = 0;   ///< cores now one Attention operator
  int causal = 0;  ///< of them, with the causal mask as the kernel's own
  /// Cores left materialized, in graph order: their softmax node and why ("dropout on the
  /// probabilities").
  std::vector<std::pair<std::string, std::string>> kept;
};

/// Rewrites `graph`'s attention cores (analysis/attention.h) into ai.planner.Attention
/// operators. The context tensor keeps its name and id-independent identity (its readers are
/// unchanged); the Attention operator takes the context product's name. `source` names the
/// model in errors. Deterministic.
Expected<AttentionFusion> fuse_attention(ir::Graph& graph, const std::string& source);

}  // namespace planner::analysis
