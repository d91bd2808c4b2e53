// Per-operator FLOPs and bytes moved, and model totals: the numbers the cost model builds on.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace planner::ir {

/// Work done by one operator on one device when it is not partitioned (byte counts saturate
/// at INT64_MAX).
struct OpStats {
  double flops = 0;           ///< floating-point operations (a multiply-add counts as 2)
  int64_t bytes_read = 0;     ///< bytes of all inputs
  int64_t bytes_written = 0;  ///< bytes of all outputs
};

/// FLOPs and bytes for one operator, from its type, attributes and static shapes. Operators the
/// table does not know count one FLOP per output element.
OpStats op_stats(const Graph& graph, OpId op);

/// Model totals. Element and byte totals saturate at INT64_MAX (a model too large to count
/// shows as that, never as a wrapped negative number).
struct GraphStats {
  int64_t num_ops = 0;
  int64_t parameter_count = 0;  ///< elements of all parameters
  int64_t parameter_bytes = 0;
  int64_t activation_bytes = 0;  ///< bytes of every op output (what a step materialises)
  int64_t input_bytes = 0;
  double forward_flops = 0;
  std::map<std::string, int> op_counts;  ///< by op type (domain-qualified when not ONNX)
};

GraphStats graph_stats(const Graph& graph);

}  // namespace planner::ir
