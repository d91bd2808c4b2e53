// Collectives and messages that run side by side over shared links: the data-parallel all-reduces
// of a block's tensor-parallel ranks start together (the ranks run alike programs) and cross the
// same network interfaces, so each takes as long as all of them together need (docs/codegen.md,
// "What the compiled step costs"). The simulator otherwise prices a collective alone.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "analysis/comm_model.h"
#include "codegen/program.h"
#include "importers/topology.h"

namespace planner::codegen {

/// Whether the collective over `sibling` runs beside the one over the group it was derived
/// from (each of its members alike to the member it replaces: the same collective, called at
/// the same point of the same steps).
using RunsBeside = std::function<bool(const std::vector<int>& sibling)>;

/// The time the collective of `kind` over program ranks `group` (`bytes` per member, priced
/// alone as `alone`) takes beside its siblings: the same collective over the ranks at the same
/// offset of local index on each member's node, where `runs_beside` says it runs at the same
/// time. Only for groups that span nodes; nullopt when the collective has no sibling. Siblings
/// are priced as the collective is (price_collective: over the cluster, `on_cluster`, when it
/// crosses replicas) and run at once: the collective's time `alone.time` is stretched by the
/// ratio of all the schedules' time together to its own schedule's (analysis::concurrent_time);
/// nullopt too when sharing costs nothing.
std::optional<double> time_beside_siblings(const Programs& programs,
                                           const importers::Topology& topology, StepKind kind,
                                           const std::vector<int>& group, double bytes,
                                           const analysis::CollectiveCost& alone, bool on_cluster,
                                           const RunsBeside& runs_beside);

/// The time of the message of `bytes` from program rank `from` to `to` on another node (priced
/// alone as `alone`) beside its siblings: the messages between the ranks at the same offset of
/// local index on the two nodes that `runs_beside` accepts (the pipeline's activations of a
/// stage's tensor- or data-parallel ranks, sent at once through the nodes' NICs), stretched as
/// a collective is; nullopt when there are none or sharing costs nothing.
std::optional<double> transfer_beside_siblings(const Programs& programs,
                                               const importers::Topology& topology, int from,
                                               int to, double bytes, double alone,
                                               const RunsBeside& runs_beside);

}  // namespace planner::codegen
