// Basic partition strategies of one operator: every way to split it between two workers,
// found by symbolic interval analysis of its instantiated TDL description (Tofu, 4.2).
//
// API:
//   Expected<OpAnalysis> a = analyze(instance);          // concrete where sizes are known
//   Expected<OpAnalysis> s = analyze_symbolic(instance); // ignores known sizes: [0, X/2 - 1]
//   for (const Strategy& st : a->strategies)
//     st.var, st.kind, st.input_regions[i][w].to_string(), st.output_reduction, st.replicated[i]
// Strategies come in a fixed order: output index variables (output 0's dimensions first,
// then new variables of later outputs), then reduction variables (in binding order) that an
// output body reduces over at its top level. Input and output indices follow the Instance's
// `inputs` and `outputs` (InstanceTensor::node_index maps them to the node).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/interval.h"
#include "analysis/sharding.h"
#include "support/expected.h"
#include "tdl/instantiate.h"

namespace planner::analysis {

/// How partial outputs combine after a split of a reduction variable.
enum class Reducer { kSum, kMax, kMin, kProd };

/// `sum`, `max`, `min`, `prod`.
std::string_view reducer_name(Reducer reducer);

/// The two workers' regions of one tensor: [0] for worker 0, [1] for worker 1.
using WorkerRegions = std::array<Region, 2>;

/// One basic strategy: split one index variable's range in two halves, one per worker.
struct Strategy {
  /// Output variables split the output (each worker computes half of it, the halves are
  /// concatenated); reduction variables split the reduction (each worker computes a partial
  /// output over the whole output region; the partials are reduced).
  enum class Kind { kOutput, kReduction };

  std::string var;  ///< the split index variable (as named in the Instance)
  Kind kind = Kind::kOutput;
  Interval range;                  ///< the variable's whole range [0, extent - 1]
  std::array<Interval, 2> halves;  ///< its range on each worker (worker 0 gets ceil(n/2))
  /// False when the split is degenerate: a concrete extent below 2 (a worker would get
  /// nothing). Symbolic extents are assumed splittable.
  bool valid = true;
  std::string invalid_reason;  ///< why not valid ("extent 1"), empty when valid

  /// Per instance input, the region each worker reads, in the input's declared coordinates,
  /// clipped to its bounds (padding), halos included (conv's dx overlap). An empty region
  /// means that worker needs nothing of it.
  std::vector<WorkerRegions> input_regions;
  /// Per instance input, the same in the coordinates accesses use: the view's for inputs
  /// declared with `as [...]`, otherwise identical to input_regions.
  std::vector<WorkerRegions> input_view_regions;
  /// Per instance input: both workers need all of it (the input is replicated).
  std::vector<bool> replicated;

  /// Per instance output, the region each worker computes (whole for a reduction split).
  std::vector<WorkerRegions> output_regions;
  /// Per instance output, the part of it the bodies read back (a recurrence such as
  /// `Y[s - 1, ...]`, or a sibling output), per worker; nullopt when no body reads it.
  std::vector<std::optional<WorkerRegions>> state_regions;

  /// Set for reduction splits: how the workers' partial outputs combine.
  std::optional<Reducer> output_reduction;
  /// Per instance output: whether it is a partial result that must be reduced (true only
  /// for reduction splits and only for outputs whose body reduces over `var`).
  std::vector<bool> reduced_outputs;
};

/// The analysis of one operator instance.
struct OpAnalysis {
  std::string label;      ///< the instance's label, for messages
  bool symbolic = false;  ///< some size is unknown: bounds are affine in size symbols
  /// Extent of every index variable: output variables first, then reduction variables.
  std::vector<std::pair<std::string, Affine>> extents;
  std::vector<std::string> output_vars;     ///< every output index variable
  std::vector<std::string> reduction_vars;  ///< every reduction variable
  /// Per instance input, its whole region ([0, D - 1] per declared dimension).
  std::vector<Region> input_bounds;
  std::vector<Strategy> strategies;  ///< see the file comment for the order
  /// Every output reads each input at exactly its own index (no reductions, no halos, no
  /// broadcasting, no opaque functions): regions are identical in and out, so a chain of such
  /// operators can be coarsened into one (Tofu, section 5).
  bool elementwise = false;

  /// The strategy splitting `var`, or null.
  const Strategy* find(std::string_view var) const;
  /// The extent of `var` (asserts that it exists).
  const Affine& extent(std::string_view var) const;
};

/// Analyses `instance`, using the concrete size of every symbol `instance.sizes` binds.
/// Errors (a product or comparison of two intervals, an extent that cannot be inferred) name
/// the operator and the expression.
Expected<OpAnalysis> analyze(const tdl::Instance& instance);

/// Like analyze, but every size stays symbolic (Tofu's symbolic analysis).
Expected<OpAnalysis> analyze_symbolic(const tdl::Instance& instance);

/// A multi-line text form for `planner tdl show`: extents, then one block per strategy with
/// each input's and output's region per worker.
std::string to_string(const OpAnalysis& analysis, const tdl::Instance& instance);

/// Concrete regions of one shard of an operator: per instance input the box it reads (declared
/// coordinates, half-open; an input it does not read has empty ranges), per instance output the
/// box it computes (whole when a reduction variable is split: a partial result).
struct ShardRegions {
  std::vector<Box> inputs;
  std::vector<Box> outputs;
};

/// Regions for shards that split several index variables at once, each into any number of
/// pieces (the basic strategies split one variable in two): the lowering of a plan asks this
/// for every shard of every operator. Requires an instance whose sizes are all concrete.
class ShardEvaluator {
 public:
  static Expected<ShardEvaluator> create(const tdl::Instance& instance);
  ShardEvaluator(ShardEvaluator&&) noexcept;
  ShardEvaluator& operator=(ShardEvaluator&&) noexcept;
  ~ShardEvaluator();

  /// The extent of an index variable (output or reduction).
  int64_t extent(std::string_view var) const;
  /// Every index variable and its extent.
  const std::map<std::string, int64_t>& extents() const { return extents_; }

  /// The regions when each variable in `ranges` covers [first, second] (inclusive) and every
  /// other variable its whole extent.
  Expected<ShardRegions> evaluate(
      const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) const;

 private:
  ShardEvaluator();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::map<std::string, int64_t> extents_;
};

}  // namespace planner::analysis
