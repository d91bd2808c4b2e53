// Tests for analysis/comm_model.cpp: link contention, collectives, sharding conversions.
#include "analysis/comm_model.h"

#include <numeric>

#include <doctest/doctest.h>

namespace planner::analysis {
namespace {

Topology preset(const char* name) {
  auto t = importers::topology_preset(name);
  REQUIRE_MESSAGE(t, name);
  return *t;
}

std::vector<DeviceId> range(int n, int first = 0) {
  std::vector<DeviceId> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST_CASE("a point-to-point transfer costs latency plus bytes over the narrowest link") {
  Topology t = preset("dgx-h100");
  Transfer tr{0, 1, 1e9};
  double expected = t.latency(0, 1) + 1e9 / t.bandwidth(0, 1);
  CHECK(step_time(t, std::vector<Transfer>{tr}) == doctest::Approx(expected));
  // Two transfers into the same GPU share its link.
  std::vector<Transfer> two = {{0, 2, 1e9}, {1, 2, 1e9}};
  CHECK(step_time(t, two) == doctest::Approx(t.latency(0, 2) + 2e9 / t.bandwidth(0, 2)));
  // Transfers in opposite directions do not.
  std::vector<Transfer> swap = {{0, 1, 1e9}, {1, 0, 1e9}};
  CHECK(step_time(t, swap) == doctest::Approx(expected));
}

TEST_CASE("ring all-reduce inside a DGX follows 2(n-1)/n B / bw") {
  Topology t = preset("dgx-h100");
  double bytes = 1e9;
  CollectiveCost c = collective_cost(t, Collective::kAllReduce, range(8), bytes);
  double bw = t.bandwidth(0, 1), lat = t.latency(0, 1);
  CHECK(c.algorithm == CollectiveAlgorithm::kRing);
  CHECK(c.time == doctest::Approx(2 * 7 * (bytes / 8 / bw + lat)));
  CHECK(c.bytes_sent == doctest::Approx(2 * 7 * bytes));
  // Small messages prefer the tree.
  CollectiveCost small = collective_cost(t, Collective::kAllReduce, range(8), 1024);
  CHECK(small.algorithm == CollectiveAlgorithm::kTree);
}

TEST_CASE("on a DGX-1's cube mesh NCCL's rings run side by side over every NVLink") {
  // Six NVLinks (25 GB/s each way) leave each V100: one ring uses one of them out of each GPU
  // (50 GB/s where the link is doubled), several rings use them all. nccl-tests measure about
  // 130 GB/s of all-reduce bus bandwidth on a DGX-1V; one ring would give 50.
  Topology t = preset("dgx1-v100");
  const double bytes = 1e9;
  CollectiveCost c = collective_cost(t, Collective::kAllReduce, range(8), bytes);
  CHECK(c.algorithm == CollectiveAlgorithm::kRing);
  const double bus = 2.0 * 7 / 8 * bytes / c.time;  // nccl-tests' bus bandwidth
  CHECK(bus > 100e9);
  CHECK(bus <= 150e9 * 1.0001);  // no more than the six links carry
  // Every device sends and receives the same bytes as one ring would: the rings split the
  // buffer, they do not add traffic.
  CHECK(c.bytes_sent == doctest::Approx(2 * 7 * bytes));
  // All-gather and reduce-scatter likewise, at half the all-reduce's time.
  CollectiveCost g = collective_cost(t, Collective::kAllGather, range(8), bytes);
  CHECK(g.time == doctest::Approx(c.time / 2).epsilon(0.01));
  // A switched node keeps its one ring: every GPU's one link to the switch is busy.
  Topology h = preset("dgx-h100");
  CollectiveCost s = collective_cost(h, Collective::kAllReduce, range(8), bytes);
  CHECK(s.schedule.steps.size() == 1);
  CHECK(s.schedule.steps[0].transfers.size() == 8);
}

TEST_CASE("all-reduce across nodes is hierarchical and bound by the network") {
  Topology t = preset("h100-cluster-4x8");
  double bytes = 4e9;
  CollectiveCost flat_cost = collective_cost(t, Collective::kAllReduce, range(32), bytes);
  CHECK(flat_cost.algorithm == CollectiveAlgorithm::kHierarchical);
  CHECK(flat_cost.time > collective_cost(t, Collective::kAllReduce, range(8), bytes).time);
  // Sanity: no faster than the inter-node part alone over one NIC per GPU.
  double ib = t.bandwidth(0, 8);
  CHECK(flat_cost.time > 2.0 * 3 / 32 * bytes / ib);
}

TEST_CASE("a one-device group costs nothing") {
  Topology t = preset("dgx-h100");
  CHECK(collective_cost(t, Collective::kAllGather, {3}, 1e9).time == 0);
}

TEST_CASE("concurrent collectives on disjoint NVSwitch ports do not slow each other") {
  Topology t = preset("dgx-h100");
  CollectiveCost a = collective_cost(t, Collective::kAllReduce, {0, 1, 2, 3}, 1e9);
  CollectiveCost b = collective_cost(t, Collective::kAllReduce, {4, 5, 6, 7}, 1e9);
  std::vector<CommSchedule> both = {a.schedule, b.schedule};
  CHECK(concurrent_time(t, both) == doctest::Approx(a.time));
}

TEST_CASE("concurrent rings crossing the same PCIe host bridge contend") {
  Topology t = preset("p2.8xlarge");
  CollectiveCost a = collective_cost(t, Collective::kAllReduce, {0, 4}, 1e8);
  CollectiveCost b = collective_cost(t, Collective::kAllReduce, {1, 5}, 1e8);
  std::vector<CommSchedule> both = {a.schedule, b.schedule};
  CHECK(concurrent_time(t, both) > a.time * 1.5);
}

TEST_CASE("conversions: none, local slice, all-gather, all-reduce, reduce-scatter") {
  Topology t = preset("dgx-h100");
  std::vector<int64_t> shape = {1024, 1024};
  Sharding rows = Sharding::split(2, 0, range(8));
  Sharding cols = Sharding::split(2, 1, range(8));
  Sharding rep = Sharding::replicated(2, range(8));
  CHECK(convert(t, shape, 4, rows, rows).time == 0);
  Conversion slice = convert(t, shape, 4, rep, rows);
  CHECK(slice.time == 0);
  CHECK(slice.description == "local slice");

  Conversion gather = convert(t, shape, 4, rows, rep);
  CHECK(gather.bytes_sent == doctest::Approx(7.0 * 1024 * 1024 * 4));
  CHECK(gather.time > 0);

  Conversion a2a = convert(t, shape, 4, rows, cols);
  // Each device keeps 1/8 of its rows and sends 7/8.
  CHECK(a2a.bytes_sent == doctest::Approx(7.0 / 8 * 1024 * 1024 * 4));

  Sharding partial = *parse_sharding("S[1,1]+P8@0-7");
  Conversion ar = convert(t, shape, 4, partial, rep);
  // Either a plain all-reduce or reduce-scatter + all-gather, whichever the model finds cheaper:
  // never worse than the all-reduce alone.
  CHECK(ar.time <= collective_cost(t, Collective::kAllReduce, range(8), 1024.0 * 1024 * 4).time);
  Conversion rs = convert(t, shape, 4, partial, rows);
  CHECK(rs.description.rfind("reduce-scatter over 8 devices along dimension 0", 0) == 0);
  CHECK(rs.time < ar.time);
}

}  // namespace
}  // namespace planner::analysis
