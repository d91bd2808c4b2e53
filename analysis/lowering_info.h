// What the lowering knows of one operator, internal to the analysis library: shared by
// lowering.cpp (tasks of a plan) and op_shards.cpp (the shards of one operator under a config).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/lowering.h"
#include "analysis/strategies.h"
#include "tdl/instantiate.h"

namespace planner::analysis {

// What the lowering needs of one operator, computed once.
struct Lowering::OpInfo {
  bool described = false;
  std::shared_ptr<const tdl::Instance> instance;
  std::unique_ptr<ShardEvaluator> evaluator;
  std::vector<int> instance_input;            // per node input: instance input index, or -1
  std::vector<int> instance_output;           // per node output: instance output index, or -1
  std::map<std::string, int64_t> splittable;  // var -> extent
  std::map<std::string, std::vector<bool>> reduced_into;  // var -> per instance output
  std::map<std::string, Reducer> reducer;                 // var -> how its partials combine
  double flops = 0;
  std::string error;  // why the evaluator could not be built (the op is then kept whole)
};

namespace detail {

// For output k of an op's instance under config c: per split, the output dimension it tiles
// (or -1), and whether a split that tiles none is a reduction into that output (a partial
// sum) rather than a replication.
std::pair<std::vector<int>, std::vector<bool>> split_roles(const Lowering::OpInfo& in,
                                                           const OpConfig& c, int k, int rank);

/// A box of no elements for a tensor of `rank` (at least one dimension): what a shard that reads
/// nothing of an input needs of it.
Box no_box(int rank);

}  // namespace detail
}  // namespace planner::analysis
