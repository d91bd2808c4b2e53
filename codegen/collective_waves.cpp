// Collectives that run side by side over shared links: see collective_waves.h.
#include "codegen/collective_waves.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "codegen/program_simulation.h"

namespace planner::codegen {

std::optional<double> time_beside_siblings(const Programs& programs,
                                           const importers::Topology& topology, StepKind kind,
                                           const std::vector<int>& group, double bytes,
                                           const analysis::CollectiveCost& alone, bool on_cluster,
                                           const RunsBeside& runs_beside) {
  if (group.size() < 2 || bytes <= 0) return std::nullopt;
  // The program's ranks by node, in local order (rank r runs device r).
  std::map<int, std::vector<int>> on_node;
  for (int r = 0; r < programs.num_ranks; ++r) on_node[topology.device(r).node].push_back(r);
  std::set<int> nodes;
  for (int g : group) nodes.insert(topology.device(g).node);
  if (nodes.size() < 2) return std::nullopt;
  const size_t m = on_node[*nodes.begin()].size();
  for (int n : nodes)
    if (on_node[n].size() != m) return std::nullopt;
  const std::set<int> mine(group.begin(), group.end());
  std::vector<analysis::CommSchedule> schedules{alone.schedule};
  std::set<std::vector<int>> seen;
  for (size_t o = 1; o < m; ++o) {
    std::vector<int> sibling;
    for (int g : group) {
      const std::vector<int>& local = on_node[topology.device(g).node];
      const size_t at =
          static_cast<size_t>(std::find(local.begin(), local.end(), g) - local.begin());
      const int s = local[(at + o) % m];
      if (mine.count(s)) {
        sibling.clear();
        break;
      }
      sibling.push_back(s);
    }
    if (sibling.empty() || !runs_beside(sibling)) continue;
    // Offsets that only permute another sibling's members name the same collective once.
    std::vector<int> members = sibling;
    std::sort(members.begin(), members.end());
    if (!seen.insert(members).second) continue;
    std::vector<int> cluster_group;
    auto cost = price_collective(programs, topology, kind, sibling, bytes, &cluster_group);
    if (!cost) continue;
    schedules.push_back(std::move(cost->schedule));
  }
  if (schedules.size() < 2) return std::nullopt;
  const importers::Topology& links =
      on_cluster && programs.replica_set && programs.replica_set->cluster
          ? *programs.replica_set->cluster
          : topology;
  // The collective model's time, stretched by what sharing the links costs: the schedules'
  // time together over the collective's own (1 where no link is shared; the collective model
  // prices algorithms and latencies the bare schedules do not).
  const double together = analysis::concurrent_time(links, schedules);
  const double own = analysis::concurrent_time(links, std::span(schedules.data(), 1));
  if (own <= 0 || together <= own) return std::nullopt;
  return alone.time * together / own;
}

}  // namespace planner::codegen
