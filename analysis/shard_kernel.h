// Running one shard of an operator natively: which operators and configurations can run on
// their slices, and how their attributes and shape inputs are rewritten for the shard
// (Reshape/Expand shapes, Slice bounds, Conv/Pool pads at halo boundaries, biases of partial
// sums; Pad, SliceGrad and PadGrad along the axes they leave untouched). Everything else is
// compiled by the partitioner's generic fallback.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/sharding.h"
#include "ir/graph.h"

namespace planner::analysis {

/// What the partitioner knows about one shard of one operator.
struct ShardRequest {
  const ir::Graph* graph = nullptr;
  ir::OpId op = ir::kNoOp;
  /// Per node input, the box the shard reads (whole for inputs the description does not
  /// name); empty Box for an absent input.
  std::vector<Box> input_boxes;
  /// Per node output, the box the shard computes.
  std::vector<Box> output_boxes;
  /// Per node output: -1 when the shard's output is final, else its partial index.
  std::vector<int> partial_index;
  bool split = false;  ///< the config splits some variable (else every box is whole)
};

/// One input of a native shard kernel.
struct ShardInput {
  enum class Kind { kSlice, kConstant, kAbsent };
  Kind kind = Kind::kSlice;
  Box box;              ///< kSlice: the box of the node input to read
  ir::Tensor constant;  ///< kConstant: a replacement (rewritten shape, bounds), with data
};

/// The kernel a shard runs natively.
struct ShardKernel {
  std::map<std::string, ir::Attribute> attributes;  ///< rewritten attributes
  std::vector<ShardInput> inputs;                   ///< one per node input
};

/// The native kernel of a shard, or nullopt (with `why` set) when the op must fall back to
/// running whole. Unsplit shards are always native.
std::optional<ShardKernel> native_shard_kernel(const ShardRequest& request, std::string& why);

/// Whether partial sums of this op type may be computed natively (its output is linear in
/// the split reduction, so the shards' results add up; biases go to partial 0 only).
bool partial_sums_native(const ir::Op& op);

/// The bytes of `box` of a tensor holding data (row-major).
std::vector<uint8_t> slice_data(const ir::Tensor& tensor, const Box& box);

/// The operator types run sharded natively, for docs and `planner compile -v`.
std::vector<std::string> native_op_types();

}  // namespace planner::analysis
