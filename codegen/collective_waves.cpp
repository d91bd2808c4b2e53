// Collectives and messages that run side by side over shared links: see collective_waves.h.
#include "codegen/collective_waves.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "codegen/program_simulation.h"

namespace planner::codegen {
namespace {

// The siblings of `members` (program ranks, on two or more nodes): for each offset o of local
// index, the ranks at o past each member's on the member's node, member for member, where every
// node holds as many of the program's ranks; each distinct set of ranks once, none that shares a
// rank with `members`, and only those `runs_beside` accepts.
std::vector<std::vector<int>> siblings(const Programs& programs,
                                       const importers::Topology& topology,
                                       const std::vector<int>& members,
                                       const RunsBeside& runs_beside) {
  std::map<int, std::vector<int>> on_node;  // rank r runs device r
  for (int r = 0; r < programs.num_ranks; ++r) on_node[topology.device(r).node].push_back(r);
  std::set<int> nodes;
  for (int g : members) nodes.insert(topology.device(g).node);
  if (nodes.size() < 2) return {};
  const size_t m = on_node[*nodes.begin()].size();
  for (int n : nodes)
    if (on_node[n].size() != m) return {};
  const std::set<int> mine(members.begin(), members.end());
  std::set<std::vector<int>> seen;
  std::vector<std::vector<int>> out;
  for (size_t o = 1; o < m; ++o) {
    std::vector<int> sibling;
    for (int g : members) {
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
    // Offsets that only permute another sibling's ranks name the same collective once.
    std::vector<int> ranks = sibling;
    std::sort(ranks.begin(), ranks.end());
    if (seen.insert(ranks).second) out.push_back(std::move(sibling));
  }
  return out;
}

// `alone` stretched by the schedules' time together over their first one's alone on `links`
// (1 where they share no link); nullopt when sharing costs nothing.
std::optional<double> stretched(const importers::Topology& links,
                                const std::vector<analysis::CommSchedule>& schedules,
                                double alone) {
  if (schedules.size() < 2) return std::nullopt;
  const double together = analysis::concurrent_time(links, schedules);
  const double own = analysis::concurrent_time(links, std::span(schedules.data(), 1));
  if (own <= 0 || together <= own) return std::nullopt;
  return alone * together / own;
}

}  // namespace

std::optional<double> time_beside_siblings(const Programs& programs,
                                           const importers::Topology& topology, StepKind kind,
                                           const std::vector<int>& group, double bytes,
                                           const analysis::CollectiveCost& alone, bool on_cluster,
                                           const RunsBeside& runs_beside) {
  if (group.size() < 2 || bytes <= 0) return std::nullopt;
  std::vector<analysis::CommSchedule> schedules{alone.schedule};
  for (const std::vector<int>& sibling : siblings(programs, topology, group, runs_beside)) {
    std::vector<int> cluster_group;
    auto cost = price_collective(programs, topology, kind, sibling, bytes, &cluster_group);
    if (cost) schedules.push_back(std::move(cost->schedule));
  }
  // The collective model's time, stretched by what sharing the links costs: the schedules'
  // time together over the collective's own (the collective model prices algorithms and
  // latencies the bare schedules do not).
  const importers::Topology& links =
      on_cluster && programs.replica_set && programs.replica_set->cluster
          ? *programs.replica_set->cluster
          : topology;
  return stretched(links, schedules, alone.time);
}

std::optional<double> transfer_beside_siblings(const Programs& programs,
                                               const importers::Topology& topology, int from,
                                               int to, double bytes, double alone,
                                               const RunsBeside& runs_beside) {
  if (from == to || bytes <= 0) return std::nullopt;
  auto message = [&](int src, int dst) {
    analysis::CommSchedule s;
    s.steps.push_back({1, {{src, dst, bytes}}});
    return s;
  };
  std::vector<analysis::CommSchedule> schedules{message(from, to)};
  for (const std::vector<int>& sibling : siblings(programs, topology, {from, to}, runs_beside))
    schedules.push_back(message(sibling[0], sibling[1]));
  return stretched(topology, schedules, alone);
}

}  // namespace planner::codegen
