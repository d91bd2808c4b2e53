// Communication cost model: link-contention steps, collectives, sharding conversions.
#include "analysis/comm_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

namespace planner::analysis {

double CommSchedule::total_bytes() const {
  double total = 0;
  for (const CommStep& s : steps)
    for (const Transfer& t : s.transfers)
      if (t.src != t.dst) total += s.repeat * t.bytes;
  return total;
}

void CommSchedule::append(const CommSchedule& other) {
  steps.insert(steps.end(), other.steps.begin(), other.steps.end());
}

namespace {

// Calls f(link, direction) for each link on the route from src to dst; direction 0 runs from
// the link's endpoint a to b. GPU endpoints have the device's id.
template <typename F>
void for_each_hop(const Topology& topology, DeviceId src, DeviceId dst, F&& f) {
  importers::Route route = topology.route(src, dst);
  importers::EndpointId at = src;
  for (importers::LinkId l : route.links) {
    const importers::Link& link = topology.links()[static_cast<size_t>(l)];
    int direction = at == link.a ? 0 : 1;
    f(l, direction);
    at = link.other(at);
  }
}

}  // namespace

double step_time(const Topology& topology, std::span<const Transfer> transfers) {
  // Bytes per (link, direction), in per-thread buffers reused across calls (this runs for
  // every conversion a search prices).
  thread_local std::vector<double> load;
  thread_local std::vector<size_t> touched;
  thread_local std::vector<std::pair<importers::LinkId, bool>> hops;
  const size_t slots = topology.links().size() * 2;
  if (load.size() < slots) load.assign(slots, 0.0);
  touched.clear();
  double latency = 0;
  for (const Transfer& t : transfers) {
    if (t.src == t.dst || t.bytes <= 0) continue;
    latency = std::max(latency, topology.latency(t.src, t.dst));
    hops.clear();
    topology.append_hops(t.src, t.dst, hops);
    for (const auto& [l, forward] : hops) {
      size_t slot = static_cast<size_t>(l) * 2 + (forward ? 0 : 1);
      if (load[slot] == 0.0) touched.push_back(slot);
      load[slot] += t.bytes;
    }
  }
  // Each link's direction in turn, in slot order, as the sorted map gave them: the maximum is
  // the same whatever the order, and the buffer is left zeroed.
  std::sort(touched.begin(), touched.end());
  double busiest = 0;
  for (size_t slot : touched) {
    busiest = std::max(busiest, load[slot] / topology.links()[slot / 2].bandwidth);
    load[slot] = 0.0;
  }
  return busiest + latency;
}

double schedule_time(const Topology& topology, const CommSchedule& schedule) {
  double total = 0;
  for (const CommStep& s : schedule.steps)
    if (s.repeat > 0) total += s.repeat * step_time(topology, s.transfers);
  return total;
}

double concurrent_time(const Topology& topology, std::span<const CommSchedule> schedules) {
  struct Cursor {
    size_t step = 0;
    int left = 0;
  };
  std::vector<Cursor> cursors(schedules.size());
  for (size_t i = 0; i < schedules.size(); ++i)
    if (!schedules[i].steps.empty()) cursors[i].left = schedules[i].steps[0].repeat;
  double total = 0;
  while (true) {
    int run = std::numeric_limits<int>::max();
    std::vector<Transfer> merged;
    for (size_t i = 0; i < schedules.size(); ++i) {
      // Skip finished schedules and empty steps.
      while (cursors[i].step < schedules[i].steps.size() && cursors[i].left <= 0) {
        if (++cursors[i].step < schedules[i].steps.size())
          cursors[i].left = schedules[i].steps[cursors[i].step].repeat;
      }
      if (cursors[i].step >= schedules[i].steps.size()) continue;
      run = std::min(run, cursors[i].left);
      const auto& tr = schedules[i].steps[cursors[i].step].transfers;
      merged.insert(merged.end(), tr.begin(), tr.end());
    }
    if (run == std::numeric_limits<int>::max()) break;
    total += run * step_time(topology, merged);
    for (size_t i = 0; i < schedules.size(); ++i)
      if (cursors[i].step < schedules[i].steps.size()) cursors[i].left -= run;
  }
  return total;
}

void add_link_bytes(const Topology& topology, const CommSchedule& schedule,
                    std::vector<double>& link_bytes) {
  link_bytes.resize(topology.links().size(), 0.0);
  for (const CommStep& s : schedule.steps)
    for (const Transfer& t : s.transfers) {
      if (t.src == t.dst) continue;
      for_each_hop(topology, t.src, t.dst, [&](importers::LinkId l, int) {
        link_bytes[static_cast<size_t>(l)] += s.repeat * t.bytes;
      });
    }
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kReduceScatter:
      return "reduce-scatter";
    case Collective::kAllToAll:
      return "all-to-all";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "?";
}

std::string_view algorithm_name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kTree:
      return "tree";
    case CollectiveAlgorithm::kHierarchical:
      return "hierarchical";
    case CollectiveAlgorithm::kDirect:
      return "direct";
  }
  return "?";
}

namespace {

// Every device sends `bytes` to the next one in the ring, `repeat` times.
CommStep ring_step(const std::vector<DeviceId>& ring, double bytes, int repeat) {
  CommStep step;
  step.repeat = repeat;
  for (size_t i = 0; i < ring.size(); ++i)
    step.transfers.push_back({ring[i], ring[(i + 1) % ring.size()], bytes});
  return step;
}

// Rings run side by side (one per node, or one per local index across nodes).
CommStep parallel_rings(const std::vector<std::vector<DeviceId>>& rings, double bytes, int repeat) {
  CommStep step;
  step.repeat = repeat;
  for (const auto& ring : rings) {
    if (ring.size() < 2) continue;
    CommStep one = ring_step(ring, bytes, repeat);
    step.transfers.insert(step.transfers.end(), one.transfers.begin(), one.transfers.end());
  }
  return step;
}

// The ring order NCCL would take through a group on one node: the cycle whose slowest hop is
// fastest (ties: the larger sum of hop bandwidths, then the first found), searched exhaustively
// for groups of up to 8 devices. The given order stays when its slowest hop is already as fast
// as any pair of the group (switched nodes) or the group spans nodes (the hierarchical
// schedule orders those). Cached per thread: searches price the same groups many times.
std::vector<DeviceId> fastest_ring(const Topology& topology, const std::vector<DeviceId>& group) {
  const size_t n = group.size();
  if (n < 4 || n > 8) return group;
  int node = topology.device(group[0]).node;
  for (DeviceId d : group)
    if (topology.device(d).node != node) return group;
  auto hop = [&](DeviceId a, DeviceId b) { return topology.bandwidth(a, b); };
  auto score = [&](const std::vector<DeviceId>& ring) {
    double slowest = std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t i = 0; i < n; ++i) {
      double bw = std::min(hop(ring[i], ring[(i + 1) % n]), hop(ring[(i + 1) % n], ring[i]));
      slowest = std::min(slowest, bw);
      sum += bw;
    }
    return std::make_pair(slowest, sum);
  };
  double fastest_pair = 0;
  for (DeviceId a : group)
    for (DeviceId b : group)
      if (a != b) fastest_pair = std::max(fastest_pair, std::min(hop(a, b), hop(b, a)));
  if (score(group).first >= fastest_pair) return group;
  thread_local std::map<std::pair<const Topology*, std::vector<DeviceId>>, std::vector<DeviceId>>
      cache;
  auto key = std::make_pair(&topology, group);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::vector<DeviceId> ring = group, best = group;
  auto best_score = score(group);
  // The first device stays first: rotations are the same ring.
  std::sort(ring.begin() + 1, ring.end());
  do {
    auto sc = score(ring);
    if (sc > best_score) best_score = sc, best = ring;
  } while (std::next_permutation(ring.begin() + 1, ring.end()));
  if (cache.size() > 4096) cache.clear();
  cache.emplace(std::move(key), best);
  return best;
}

// A ring and the share of the buffer it carries.
struct WeightedRing {
  std::vector<DeviceId> ring;
  double share = 1.0;
};

// The rings NCCL runs side by side through a group on one node whose GPUs have several direct
// links each (the DGX-1's hybrid cube mesh: six NVLinks per V100, where one ring uses one link
// out of each GPU): chosen greedily, each the ring whose slowest hop has the most bandwidth
// left by the rings before it (link by link and direction by direction, along the routes),
// until a ring would get under a quarter of the first one's; each carries a share of the
// buffer in proportion to its bandwidth. One ring where the first leaves no link free (switched
// nodes, where every GPU's one link to the switch carries it). Searched exhaustively for
// groups of 3 to 8 devices, cached per thread.
std::vector<WeightedRing> ring_set(const Topology& topology, const std::vector<DeviceId>& group) {
  const size_t n = group.size();
  if (n < 3 || n > 8) return {{group, 1.0}};
  const int node = topology.device(group[0]).node;
  for (DeviceId d : group)
    if (topology.device(d).node != node) return {{group, 1.0}};
  thread_local std::map<std::pair<const Topology*, std::vector<DeviceId>>,
                        std::vector<WeightedRing>>
      cache;
  auto key = std::make_pair(&topology, group);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  // Per (pair of positions in the group): the link directions its route takes.
  std::vector<std::vector<size_t>> route(n * n);
  std::vector<std::pair<importers::LinkId, bool>> hops;
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      hops.clear();
      topology.append_hops(group[a], group[b], hops);
      for (const auto& [l, forward] : hops)
        route[a * n + b].push_back(static_cast<size_t>(l) * 2 + (forward ? 0 : 1));
    }
  std::map<size_t, double> left;  // bandwidth left per link direction
  auto remaining = [&](size_t slot) {
    auto it = left.find(slot);
    return it != left.end() ? it->second : topology.links()[slot / 2].bandwidth;
  };
  // A ring's bandwidth given what is left: each link direction shared by its uses.
  std::vector<std::pair<size_t, int>> uses;
  auto ring_bandwidth = [&](const std::vector<size_t>& order) {
    uses.clear();
    for (size_t i = 0; i < n; ++i)
      for (size_t slot : route[order[i] * n + order[(i + 1) % n]]) {
        auto it =
            std::find_if(uses.begin(), uses.end(), [&](const auto& u) { return u.first == slot; });
        if (it == uses.end())
          uses.emplace_back(slot, 1);
        else
          ++it->second;
      }
    double bw = std::numeric_limits<double>::infinity();
    for (const auto& [slot, u] : uses) bw = std::min(bw, remaining(slot) / u);
    return bw;
  };
  // Every ring leaves each device by one of its first hops: a device with under a quarter of
  // the first ring's bandwidth left on them ends the search.
  auto out_left = [&](size_t a) {
    std::vector<size_t> firsts;
    for (size_t b = 0; b < n; ++b)
      if (a != b && !route[a * n + b].empty()) firsts.push_back(route[a * n + b][0]);
    std::sort(firsts.begin(), firsts.end());
    firsts.erase(std::unique(firsts.begin(), firsts.end()), firsts.end());
    double sum = 0;
    for (size_t slot : firsts) sum += remaining(slot);
    return sum;
  };
  std::vector<WeightedRing> rings;
  double first = 0, total = 0;
  std::vector<double> bandwidths;
  for (int round = 0; round < 8; ++round) {
    if (round > 0) {
      bool room = true;
      for (size_t a = 0; a < n && room; ++a) room = out_left(a) >= first / 4;
      if (!room) break;
    }
    std::vector<size_t> order(n), best;
    for (size_t i = 0; i < n; ++i) order[i] = i;
    double best_bw = 0, bound = std::numeric_limits<double>::infinity();
    for (size_t a = 0; a < n; ++a) bound = std::min(bound, out_left(a));
    if (ring_bandwidth(order) >= bound) {  // the given order is as fast as any (switched nodes)
      best_bw = ring_bandwidth(order), best = order;
    } else {
      do {  // the first device stays first: rotations are the same ring
        double bw = ring_bandwidth(order);
        if (bw > best_bw * (1 + 1e-12)) best_bw = bw, best = order;
      } while (std::next_permutation(order.begin() + 1, order.end()));
    }
    if (best.empty() || best_bw <= 0 || (round > 0 && best_bw < first / 4)) break;
    if (round == 0) first = best_bw;
    ring_bandwidth(best);
    for (const auto& [slot, u] : uses) left[slot] = remaining(slot) - best_bw * u;
    WeightedRing r;
    for (size_t i : best) r.ring.push_back(group[i]);
    rings.push_back(std::move(r));
    bandwidths.push_back(best_bw);
    total += best_bw;
  }
  if (rings.empty()) rings.push_back({group, 1.0});
  for (size_t i = 0; i < bandwidths.size(); ++i) rings[i].share = bandwidths[i] / total;
  if (cache.size() > 4096) cache.clear();
  cache.emplace(std::move(key), rings);
  return rings;
}

CommSchedule ring_schedule(Collective c, const std::vector<DeviceId>& given, double bytes,
                           const Topology& topology) {
  if (c == Collective::kAllReduce || c == Collective::kAllGather ||
      c == Collective::kReduceScatter) {
    std::vector<WeightedRing> rings = ring_set(topology, given);
    if (rings.size() > 1) {
      // Every ring moves its share in the same number of steps, all at once.
      const int n = static_cast<int>(given.size());
      CommStep step;
      step.repeat = c == Collective::kAllReduce ? 2 * (n - 1) : n - 1;
      for (const WeightedRing& r : rings) {
        CommStep one = ring_step(r.ring, bytes * r.share / n, 1);
        step.transfers.insert(step.transfers.end(), one.transfers.begin(), one.transfers.end());
      }
      CommSchedule s;
      s.steps.push_back(std::move(step));
      return s;
    }
  }
  const std::vector<DeviceId> group =
      c == Collective::kBroadcast ? given : fastest_ring(topology, given);
  const int n = static_cast<int>(group.size());
  CommSchedule s;
  double chunk = bytes / n;
  switch (c) {
    case Collective::kAllReduce:
      s.steps.push_back(ring_step(group, chunk, 2 * (n - 1)));
      break;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      s.steps.push_back(ring_step(group, chunk, n - 1));
      break;
    case Collective::kAllToAll: {
      CommStep step;
      for (DeviceId a : group)
        for (DeviceId b : group)
          if (a != b) step.transfers.push_back({a, b, chunk});
      s.steps.push_back(std::move(step));
      break;
    }
    case Collective::kBroadcast: {
      // Scatter from the root, then all-gather (van de Geijn).
      CommStep scatter;
      for (int i = 1; i < n; ++i)
        scatter.transfers.push_back({group[0], group[static_cast<size_t>(i)], chunk});
      s.steps.push_back(std::move(scatter));
      s.steps.push_back(ring_step(group, chunk, n - 1));
      break;
    }
  }
  return s;
}

// Two-level schedules for groups with the same number m >= 2 of devices on each of k >= 2
// nodes; nullopt otherwise.
std::optional<CommSchedule> hierarchical_schedule(const Topology& topology, Collective c,
                                                  const std::vector<DeviceId>& group,
                                                  double bytes) {
  std::map<int, std::vector<DeviceId>> by_node;
  for (DeviceId d : group) by_node[topology.device(d).node].push_back(d);
  const int k = static_cast<int>(by_node.size());
  if (k < 2) return std::nullopt;
  const int m = static_cast<int>(by_node.begin()->second.size());
  if (m < 2) return std::nullopt;
  std::vector<std::vector<DeviceId>> intra, inter(static_cast<size_t>(m));
  for (const auto& [node, devs] : by_node) {
    if (static_cast<int>(devs.size()) != m) return std::nullopt;
    intra.push_back(devs);
    for (int l = 0; l < m; ++l)
      inter[static_cast<size_t>(l)].push_back(devs[static_cast<size_t>(l)]);
  }
  const double n = static_cast<double>(k) * m;
  CommSchedule s;
  switch (c) {
    case Collective::kAllReduce:
      s.steps.push_back(parallel_rings(intra, bytes / m, m - 1));        // reduce-scatter
      s.steps.push_back(parallel_rings(inter, bytes / n, 2 * (k - 1)));  // all-reduce
      s.steps.push_back(parallel_rings(intra, bytes / m, m - 1));        // all-gather
      return s;
    case Collective::kAllGather:
      s.steps.push_back(parallel_rings(inter, bytes / n, k - 1));
      s.steps.push_back(parallel_rings(intra, bytes / m, m - 1));
      return s;
    case Collective::kReduceScatter:
      s.steps.push_back(parallel_rings(intra, bytes / m, m - 1));
      s.steps.push_back(parallel_rings(inter, bytes / n, k - 1));
      return s;
    default:
      return std::nullopt;
  }
}

}  // namespace

CollectiveCost collective_cost(const Topology& topology, Collective collective,
                               const std::vector<DeviceId>& group, double bytes) {
  CollectiveCost best;
  best.collective = collective;
  const int n = static_cast<int>(group.size());
  if (n <= 1 || bytes <= 0) return best;

  CommSchedule ring = ring_schedule(collective, group, bytes, topology);
  best.algorithm = collective == Collective::kAllToAll ? CollectiveAlgorithm::kDirect
                                                       : CollectiveAlgorithm::kRing;
  best.time = schedule_time(topology, ring);
  best.bytes_sent = ring.total_bytes();
  best.schedule = std::move(ring);

  if (auto h = hierarchical_schedule(topology, collective, group, bytes)) {
    double t = schedule_time(topology, *h);
    if (t < best.time) {
      best.algorithm = CollectiveAlgorithm::kHierarchical;
      best.time = t;
      best.bytes_sent = h->total_bytes();
      best.schedule = std::move(*h);
    }
  }

  if (collective == Collective::kAllReduce || collective == Collective::kBroadcast) {
    // A pipelined binary tree: latency grows with depth, not with n; each edge carries the
    // whole buffer once per direction used.
    int depth = static_cast<int>(std::ceil(std::log2(static_cast<double>(n))));
    double bw = std::numeric_limits<double>::infinity(), lat = 0;
    for (int i = 1; i < n; ++i) {
      DeviceId child = group[static_cast<size_t>(i)],
               parent = group[static_cast<size_t>((i - 1) / 2)];
      bw = std::min(bw, topology.bandwidth(child, parent));
      lat = std::max(lat, topology.latency(child, parent));
    }
    int passes = collective == Collective::kAllReduce ? 2 : 1;
    double t = passes * (depth * lat + bytes / bw);
    if (t < best.time) {
      best.algorithm = CollectiveAlgorithm::kTree;
      best.time = t;
      best.bytes_sent = passes * (n - 1) * bytes;
      // Link accounting for the tree: each child-parent edge carries the buffer per pass.
      CommSchedule tree;
      CommStep step;
      step.repeat = passes;
      for (int i = 1; i < n; ++i)
        step.transfers.push_back(
            {group[static_cast<size_t>(i)], group[static_cast<size_t>((i - 1) / 2)], bytes});
      tree.steps.push_back(std::move(step));
      best.schedule = std::move(tree);
    }
  }
  return best;
}

namespace {

// Moves data between two shardings without partial sums: every target shard takes each piece
// it lacks from the nearest holder of that piece.
CommSchedule redistribute(const Topology& topology, const std::vector<int64_t>& shape,
                          int64_t element_size, const Sharding& from, const Sharding& to) {
  // Source tiles and their holders.
  const int per_tile = from.partial * from.replicas;
  std::vector<std::vector<DeviceId>> holders(static_cast<size_t>(from.num_tiles()));
  for (int i = 0; i < from.num_shards(); ++i)
    holders[static_cast<size_t>(i / per_tile)].push_back(from.devices[static_cast<size_t>(i)]);
  std::vector<Box> tile_box(holders.size());
  for (size_t t = 0; t < holders.size(); ++t)
    tile_box[t] = from.shard_box(shape, static_cast<int>(t) * per_tile);

  std::map<DeviceId, double> sent;  // balance load over replicas
  CommStep step;
  for (int j = 0; j < to.num_shards(); ++j) {
    if (to.partial_index(j) != 0) continue;  // other partial copies start at zero
    DeviceId dst = to.devices[static_cast<size_t>(j)];
    Box want = to.shard_box(shape, j);
    for (size_t t = 0; t < holders.size(); ++t) {
      int64_t elements = box_elements(intersect(want, tile_box[t]));
      if (elements == 0) continue;
      const auto& hs = holders[t];
      if (std::find(hs.begin(), hs.end(), dst) != hs.end()) continue;  // already local
      DeviceId best = hs[0];
      auto better = [&](DeviceId a, DeviceId b) {
        bool an = topology.same_node(a, dst), bn = topology.same_node(b, dst);
        if (an != bn) return an;
        double ab = topology.bandwidth(a, dst), bb = topology.bandwidth(b, dst);
        if (ab != bb) return ab > bb;
        if (sent[a] != sent[b]) return sent[a] < sent[b];
        return a < b;
      };
      for (DeviceId h : hs)
        if (better(h, best)) best = h;
      double bytes = static_cast<double>(elements * element_size);
      sent[best] += bytes;
      step.transfers.push_back({best, dst, bytes});
    }
  }
  CommSchedule s;
  if (!step.transfers.empty()) s.steps.push_back(std::move(step));
  return s;
}

std::set<DeviceId> device_set(const Sharding& s) {
  return {s.devices.begin(), s.devices.end()};
}

bool fully_replicated(const Sharding& s) {
  return s.partial == 1 && s.num_tiles() == 1;
}

// Data movement between partial-free shardings: the cheaper of direct transfers and a
// recognised all-gather.
Conversion move_data(const Topology& topology, const std::vector<int64_t>& shape,
                     int64_t element_size, const Sharding& from, const Sharding& to) {
  Conversion c;
  if (from == to) {
    c.description = "none";
    return c;
  }
  c.schedule = redistribute(topology, shape, element_size, from, to);
  c.time = schedule_time(topology, c.schedule);
  c.bytes_sent = c.schedule.total_bytes();
  size_t n = c.schedule.steps.empty() ? 0 : c.schedule.steps[0].transfers.size();
  c.description = n == 0 ? "local slice" : fmt::format("point-to-point ({} transfers)", n);

  if (fully_replicated(to) && from.replicas == 1 && from.partial == 1 &&
      device_set(from) == device_set(to) && from.num_shards() > 1) {
    double full = 1;
    for (int64_t d : shape) full *= static_cast<double>(d);
    CollectiveCost ag = collective_cost(topology, Collective::kAllGather, from.devices,
                                        full * static_cast<double>(element_size));
    if (ag.time < c.time) {
      c.time = ag.time;
      c.bytes_sent = ag.bytes_sent;
      c.schedule = ag.schedule;
      c.description = fmt::format("all-gather over {} devices ({})", from.num_shards(),
                                  algorithm_name(ag.algorithm));
    }
  }
  return c;
}

}  // namespace

Conversion convert(const Topology& topology, const std::vector<int64_t>& shape,
                   int64_t element_size, const Sharding& from, const Sharding& to) {
  if (from.partial == 1) return move_data(topology, shape, element_size, from, to);

  const int P = from.partial, R = from.replicas;
  // Option A: all-reduce every partial group, then move data.
  Sharding reduced = from;
  reduced.partial = 1;
  reduced.replicas = P * R;  // device order is unchanged: (p, r) becomes one replica index
  std::vector<CommSchedule> groups;
  double tile_bytes = static_cast<double>(from.bytes_per_device(shape, element_size));
  for (int t = 0; t < from.num_tiles(); ++t)
    for (int r = 0; r < R; ++r) {
      std::vector<DeviceId> g;
      for (int p = 0; p < P; ++p)
        g.push_back(from.devices[static_cast<size_t>(t * P * R + p * R + r)]);
      groups.push_back(collective_cost(topology, Collective::kAllReduce, g, tile_bytes).schedule);
    }
  Conversion best;
  {
    Conversion rest = move_data(topology, shape, element_size, reduced, to);
    best.time = concurrent_time(topology, groups) + rest.time;
    for (const auto& g : groups) best.schedule.append(g), best.bytes_sent += g.total_bytes();
    best.schedule.append(rest.schedule);
    best.bytes_sent += rest.bytes_sent;
    best.description = fmt::format("all-reduce over {} devices", P);
    if (rest.description != "none") best.description += " + " + rest.description;
  }
  // Option B: reduce-scatter along a dimension the target splits P times more, then move data.
  for (int d = 0; d < from.rank(); ++d) {
    int64_t pieces = static_cast<int64_t>(from.tiles[static_cast<size_t>(d)]) * P;
    if (pieces > std::max<int64_t>(shape[static_cast<size_t>(d)], 1)) continue;
    Sharding scattered = from;
    scattered.partial = 1;
    scattered.tiles[static_cast<size_t>(d)] = static_cast<int>(pieces);
    scattered.devices.assign(static_cast<size_t>(scattered.num_shards()), -1);
    for (int i = 0; i < from.num_shards(); ++i) {
      std::vector<int> coords = from.tile_coords(i);
      coords[static_cast<size_t>(d)] = coords[static_cast<size_t>(d)] * P + from.partial_index(i);
      int tile = 0;
      for (size_t k = 0; k < coords.size(); ++k) tile = tile * scattered.tiles[k] + coords[k];
      scattered.devices[static_cast<size_t>(tile * R + from.replica_index(i))] =
          from.devices[static_cast<size_t>(i)];
    }
    std::vector<CommSchedule> rs;
    for (int t = 0; t < from.num_tiles(); ++t)
      for (int r = 0; r < R; ++r) {
        std::vector<DeviceId> g;
        for (int p = 0; p < P; ++p)
          g.push_back(from.devices[static_cast<size_t>(t * P * R + p * R + r)]);
        rs.push_back(collective_cost(topology, Collective::kReduceScatter, g, tile_bytes).schedule);
      }
    Conversion rest = move_data(topology, shape, element_size, scattered, to);
    double time = concurrent_time(topology, rs) + rest.time;
    if (time < best.time) {
      best = Conversion{};
      best.time = time;
      for (const auto& g : rs) best.schedule.append(g), best.bytes_sent += g.total_bytes();
      best.schedule.append(rest.schedule);
      best.bytes_sent += rest.bytes_sent;
      best.description = fmt::format("reduce-scatter over {} devices along dimension {}", P, d);
      if (rest.description != "none") best.description += " + " + rest.description;
    }
  }
  return best;
}

}  // namespace planner::analysis
