// Communication costs on a topology: concurrent point-to-point transfers with links shared
// between them, collectives (ring, tree, hierarchical), and the conversion of a tensor from
// one sharding to another.
//
// The model: a set of transfers that run at the same time takes as long as its most loaded
// link needs (bytes through the link over its bandwidth, both directions separate) plus the
// longest route latency. A collective is a sequence of such steps. Collectives that run at the
// same time (different device groups) merge their steps, so they share links — the contention
// the simulator would otherwise miss.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/sharding.h"
#include "importers/topology.h"

namespace planner::analysis {

using importers::DeviceId;
using importers::Topology;

/// Bytes sent from one device to another.
struct Transfer {
  DeviceId src = 0;
  DeviceId dst = 0;
  double bytes = 0;
};

/// Transfers that run together, `repeat` times in a row.
struct CommStep {
  int repeat = 1;
  std::vector<Transfer> transfers;
};

/// A communication pattern: steps one after the other.
struct CommSchedule {
  std::vector<CommStep> steps;

  /// Bytes sent by all devices together.
  double total_bytes() const;
  /// Appends another schedule's steps after this one's.
  void append(const CommSchedule& other);
};

/// Time of one step of concurrent transfers (see the file comment).
double step_time(const Topology& topology, std::span<const Transfer> transfers);
/// Time of a schedule: the sum of its steps' times.
double schedule_time(const Topology& topology, const CommSchedule& schedule);
/// Time of schedules that run at the same time: step i of each runs together with step i of
/// the others (repeats are expanded where they differ).
double concurrent_time(const Topology& topology, std::span<const CommSchedule> schedules);
/// Adds each link's bytes (both directions together) for a schedule to `link_bytes`, indexed by
/// LinkId (resized as needed).
void add_link_bytes(const Topology& topology, const CommSchedule& schedule,
                    std::vector<double>& link_bytes);

/// The collectives of the cost model.
enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast };
std::string_view collective_name(Collective c);

/// How a collective is carried out.
enum class CollectiveAlgorithm { kRing, kTree, kHierarchical, kDirect };
std::string_view algorithm_name(CollectiveAlgorithm a);

/// A collective's cost with the algorithm that achieves it.
struct CollectiveCost {
  Collective collective = Collective::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  double time = 0;        ///< seconds
  double bytes_sent = 0;  ///< by all devices of the group together
  CommSchedule schedule;  ///< for link accounting and concurrency (empty for kTree)
};

/// The cheapest way to run a collective over `group` (device ids; order is the ring order and
/// the broadcast root first). `bytes` is the full buffer: for all-reduce and broadcast the
/// buffer every device holds; for all-gather the gathered output; for reduce-scatter the input
/// each device holds before scattering; for all-to-all the data each device holds (it keeps
/// 1/n and sends the rest). A group of one device costs nothing.
CollectiveCost collective_cost(const Topology& topology, Collective collective,
                               const std::vector<DeviceId>& group, double bytes);

/// Moving one tensor from one sharding to another.
struct Conversion {
  double time = 0;          ///< seconds
  double bytes_sent = 0;    ///< by all devices together
  std::string description;  ///< e.g. "all-gather over 8 devices", "point-to-point (12 transfers)"
  CommSchedule schedule;
};

/// The cheapest conversion of a tensor of `shape` (elements of `element_size` bytes) from
/// sharding `from` to sharding `to` (SoyBean's tiling conversion, TensorOpt's re-scheduling):
/// partial sums are reduced (all-reduce or reduce-scatter), and the remaining data moves as
/// the best of a recognised collective (all-gather, all-to-all) and direct transfers from the
/// nearest holder. Both shardings must be valid for the shape.
Conversion convert(const Topology& topology, const std::vector<int64_t>& shape,
                   int64_t element_size, const Sharding& from, const Sharding& to);

}  // namespace planner::analysis
