// Graph coarsening (Tofu, section 5.1): operator groups, merged element-wise chains, and
// repeated blocks that a search can treat alike.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace planner::analysis {

/// Options for coarsen().
struct CoarseningOptions {
  bool merge_elementwise = true;  ///< merge chains of same-shape element-wise forward ops
  bool detect_repeats = true;     ///< find repeated identical blocks (layers, unrolled steps)
  int min_repeats = 2;            ///< a block must occur at least this often in a row
};

/// A run of identical blocks: groups [first, first + period * repeats) in group order, where
/// group first + i * period + j is alike for every i.
struct RepeatedBlock {
  int first_group = 0;
  int period = 0;   ///< groups per block
  int repeats = 0;  ///< blocks in the run
};

/// The coarsened graph: every op of the graph in exactly one group.
struct Coarsening {
  std::vector<int> op_group;                  ///< per op: its group
  std::vector<std::vector<ir::OpId>> groups;  ///< per group: its ops, in topological order
  /// Per group: its class; groups of one class are alike (same position in a repeated block)
  /// and a search may give them one strategy. Classes are numbered in group order.
  std::vector<int> group_class;
  int num_classes = 0;
  std::vector<RepeatedBlock> blocks;
  int forward_groups = 0;      ///< groups before merging (one per forward op)
  int merged_elementwise = 0;  ///< forward groups folded into a neighbour by element-wise merging
};

/// Coarsens `graph`. `op_forward[op]` is the forward op each op belongs to (itself for forward
/// ops; a training graph's op_group); `is_elementwise(op)` says whether a forward op is
/// element-wise (from its TDL analysis). Groups are numbered in topological order of their
/// first forward op. Requires a finalized graph.
Coarsening coarsen(const ir::Graph& graph, const std::vector<ir::OpId>& op_forward,
                   const std::function<bool(ir::OpId)>& is_elementwise,
                   const CoarseningOptions& options = {});

/// One line per group class for the text dump: "group 3 (x12): Gemm, Relu".
std::string coarsening_to_text(const ir::Graph& graph, const Coarsening& coarsening);

}  // namespace planner::analysis
