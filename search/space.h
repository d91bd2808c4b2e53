// The search space shared by every search: operator groups (Tofu 5.1: a forward operator with
// its backward and update operators), and the configurations a group can take.
//
// A search decides, per group, a list of cuts of the device set (SoyBean's k-cuts, Tofu's
// recursive partition): each cut splits one index variable of the forward operator into k
// pieces, or replicates it k times. The first cut is the most significant digit of the device
// index, so on a topology numbered node by node it falls on the slowest links. The group's
// other operators follow the forward operator: a variable of theirs that walks the same
// dimension of the same tensor (or of its gradient) takes the same cut, so a tensor and its
// gradient are tiled alike (Tofu's coarsening); cuts with no such variable replicate.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/lowering.h"
#include "analysis/op_config.h"
#include "analysis/training_graph.h"
#include "support/expected.h"

namespace planner::search {

/// One cut of a device set: `var` split into `pieces` pieces, or (empty var) `pieces` replicas.
struct Cut {
  std::string var;
  int pieces = 1;
  bool operator==(const Cut&) const = default;
};

/// A group's decision: its cuts, most significant first. The product of the pieces is the
/// number of devices the group runs on.
using CutList = std::vector<Cut>;

/// The canonical text of a cut list: "m:2,k:4", "R2,m:8"; "-" when empty.
std::string cuts_to_string(const CutList& cuts);

/// Which candidate cut lists a search considers for a group.
struct CandidateOptions {
  int max_cuts = 2;       ///< at most this many cuts (distinct variables, one replication)
  bool replicate = true;  ///< allow replication cuts
  /// Cut lists of two or more cuts use only variables of the leader's outputs (FlexFlow's
  /// sample, attribute and parameter dimensions) and replication; single cuts use any
  /// variable, reductions included (Tofu's output reduction).
  bool multi_cut_output_vars_only = true;
};

/// Operator groups of a graph and the translation of a group's cuts into configs.
class GroupSpace {
 public:
  /// Groups `lowering`'s graph. With a training graph, each forward op leads the group of
  /// training.op_group; ops in no group lead groups of their own. Without one (inference),
  /// every op is a group.
  ///
  /// `shard_state` (ZeRO stage 2 as FSDP's SHARD_GRAD_OP runs it, docs/search.md): a group's
  /// update operators are split, not replicated, over the devices the cuts replicate their
  /// parameter on (along the parameter's largest dimension), so parameters, gradients and
  /// optimizer state are sharded between steps; the lowering then all-gathers each parameter
  /// before its first use (kept through the backward pass) and reduce-scatters its gradient.
  static Expected<GroupSpace> create(const analysis::Lowering& lowering,
                                     const analysis::TrainingGraph* training,
                                     bool shard_state = false);

  /// Forward and backward passes per optimizer step (--micro-batches): the cost tables count
  /// what runs per pass that many times, updates and the conversions feeding them once.
  int micro_batches() const { return micro_batches_; }
  bool shard_state() const { return shard_state_; }
  void set_micro_batches(int m) { micro_batches_ = m > 0 ? m : 1; }

  int num_groups() const { return static_cast<int>(groups_.size()); }
  /// The op whose variables the group's cuts name.
  ir::OpId leader(int group) const { return groups_[static_cast<size_t>(group)].leader; }
  /// The group's ops in topological order (the leader among them).
  const std::vector<ir::OpId>& members(int group) const {
    return groups_[static_cast<size_t>(group)].members;
  }
  int group_of(ir::OpId op) const { return group_of_[static_cast<size_t>(op)]; }
  /// The leader's splittable variables and their extents.
  const std::map<std::string, int64_t>& vars(int group) const;

  /// The configs of every member of `group` under `cuts`, on `devices` (as many as the
  /// product of the cuts' pieces; index i of the device index space maps to devices[i]).
  std::vector<std::pair<ir::OpId, analysis::OpConfig>> configs(
      int group, const CutList& cuts, const std::vector<int>& devices) const;

  /// Configs of the whole graph from one cut list per group.
  std::vector<analysis::OpConfig> plan(const std::vector<CutList>& cuts,
                                       const std::vector<int>& devices) const;

  /// Every cut list of the group over `num_devices` devices allowed by `options`, in a fixed
  /// order (replication alone first).
  std::vector<CutList> candidates(int group, int num_devices,
                                  const CandidateOptions& options = {}) const;

  /// The cut list of `group` that gives its leader `config` on 0..n-1, if one does (used to
  /// start a search from a baseline).
  std::optional<CutList> cuts_of(int group, const analysis::OpConfig& config) const;

  const analysis::Lowering& lowering() const { return *lowering_; }

 private:
  struct Group {
    ir::OpId leader = ir::kNoOp;
    std::vector<ir::OpId> members;
    /// Per member (parallel to members): leader variable -> member variable.
    std::vector<std::map<std::string, std::string>> var_map;
    /// Per member: the variables a sharded update may split where the cuts replicate it,
    /// largest extent first (empty for members that are not updates, or without shard_state).
    std::vector<std::vector<std::string>> shard_vars;
  };
  GroupSpace() = default;
  const analysis::Lowering* lowering_ = nullptr;
  int micro_batches_ = 1;
  bool shard_state_ = false;
  std::vector<Group> groups_;
  std::vector<int> group_of_;
};

/// The config of one op under `cuts` through the variable map `var_map` (leader variable ->
/// this op's variable; cuts of unmapped variables replicate), on `devices`. `extents` are the
/// op's splittable variables: a cut that would split a variable past its extent replicates.
analysis::OpConfig config_from_cuts(const CutList& cuts,
                                    const std::map<std::string, std::string>& var_map,
                                    const std::map<std::string, int64_t>& extents,
                                    const std::vector<int>& devices);

}  // namespace planner::search
