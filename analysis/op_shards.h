// One operator under one config, shard by shard, as the step runs it: the single description
// of what a shard reads, writes and computes that the lowering prices (lowering.h), the searches'
// tables are built from (Lowering::shard_op) and codegen compiles (codegen/partition.h).
//
// A shard either runs natively on its slices (shard_kernel.h says which operators and configs
// can, and rewrites their attributes and shape inputs) or, where it cannot, runs the whole
// operator on gathered inputs and keeps its box of the result. That choice is made here, once:
// the fallback's whole inputs and whole work are what every stage downstream sees.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/shard_kernel.h"
#include "analysis/sharding.h"
#include "analysis/strategies.h"

namespace planner::analysis {

/// One shard of one operator.
struct ShardPlan {
  /// Per node input, the box the operator's description gives the shard (whole for inputs it
  /// does not name, empty Box for an absent input).
  std::vector<Box> inputs;
  /// Per node output, the box of the result the shard holds (empty Box for an absent output).
  std::vector<Box> outputs;
  /// Per node output: the partial sum the shard holds (0 ..), or -1 when its result is final.
  std::vector<int> partial;
  /// The native kernel, or nullopt: the shard runs the whole operator on gathered inputs.
  std::optional<ShardKernel> kernel;
  /// Per node input, what the kernel reads: the native kernel's box, the whole tensor for a
  /// fallback, nullopt where nothing is read (an absent input, or a shape input the kernel
  /// replaces with a rewritten constant).
  std::vector<std::optional<Box>> reads;
  /// Per node output, what the kernel writes: the shard's box, or the whole tensor for a
  /// fallback (empty Box for an absent output).
  std::vector<Box> writes;
  /// The share of the operator's FLOPs the kernel computes (1 for a fallback).
  double work = 1.0;
};

/// Every shard of one operator under one config, and the layouts of its outputs.
struct OpShards {
  std::vector<ShardPlan> shards;
  /// Per node output: the layout the shards leave it in before partial sums are reduced (no
  /// devices for an absent output).
  std::vector<Sharding> sharding;
  /// Per node output: how its partial sums combine.
  std::vector<Reducer> reducer;
  bool native = true;  ///< every shard runs natively
  std::string why;     ///< when not: why the first shard that could not falls back
};

/// The whole box of a shape.
Box whole_box(const std::vector<int64_t>& shape);

/// Whether `inner` lies inside `outer` (same rank; empty ranges of `inner` are inside).
bool box_contains(const Box& outer, const Box& inner);

/// `node 'NAME' (TYPE)`, how errors name an operator.
std::string op_label(const ir::Op& op);

/// Whether `op` is an optimizer update (ai.planner SGD, Momentum, Adam): it writes the
/// parameter and state it reads, which stay resident where its shards read them.
bool is_update_op(const ir::Op& op);

/// Per tensor: the update operator that keeps it resident (a parameter or optimizer state it
/// reads and writes: every input but the gradient, input 1, that no operator produces), or
/// kNoOp. Such a tensor lives where that operator's shards read it; the lowering, the plan
/// file's layouts and codegen all place it by this rule.
std::vector<ir::OpId> resident_owners(const ir::Graph& graph);

/// The order a step runs its operators in: the graph's topological order, except that updates
/// nobody reads within the step go last, in the order their inputs become available (the
/// gradient computed first is applied first, as DDP does). On a device's compute stream the
/// backward pass then never waits for a gradient's reduction, and each update waits only for
/// its own. Codegen compiles in this order and the lowering prices in it.
/// Per op, a class shared by the operators alike in everything their shards depend on: type,
/// domain, attributes, and the dtype, shape and constant values of every input and output
/// (the repeated layers of a deep model); -1 for an operator no other is like.
std::vector<int> alike_op_classes(const ir::Graph& graph);

std::vector<ir::OpId> step_order(const ir::Graph& graph);

}  // namespace planner::analysis
