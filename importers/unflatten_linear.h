// Linear layers that exporters flatten into rows around a Gemm, kept in their leading
// dimensions instead (docs/models.md, "Attention exported batch-first").
#pragma once

#include <string>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::importers {

/// Rewrites `Reshape(X -> [d0*d1, K]) -> Gemm(transA=0, alpha=1, beta=1) -> Reshape(-> [d0, d1,
/// N])`, where X's first dimension is d0, into `Reshape(X -> [d0, d1, K]) -> MatMul (or, with
/// transB, ai.planner.MatMulTransB) -> Add(C)`: the same values without the merged [d0*d1] rows.
/// torch's nn.MultiheadAttention(batch_first=True) computes its output projection on rows [S*B]
/// (the batch is the inner factor), which no split of the batch can pass as contiguous pieces; in
/// [S, B, K] it can. The Gemm keeps its name (now the MatMul), the second Reshape's name goes
/// to the Add (an Identity without bias). Requires a finalized graph; leaves it finalized.
Expected<void> unflatten_linear(ir::Graph& graph, const std::string& source);

}  // namespace planner::importers
