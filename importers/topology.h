// Device topologies: the cluster a plan runs on, loaded from JSON (docs/topology.md) or built in.
//
// The JSON form is compact and hierarchical (device types, link types, groups of identical nodes
// with a count, a network between nodes); loading expands it into the explicit graph every later
// stage reads: endpoints (GPUs, switches, CPUs, NICs) joined by full-duplex links, with the GPUs
// numbered in rank order (node-major). Routes between all pairs of GPUs are computed once, when
// the topology is built, so the cost model and the simulator query them in O(hops).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/dtype.h"
#include "support/expected.h"

namespace planner::importers {

using DeviceId = int32_t;    ///< a GPU's rank: index into Topology::devices()
using EndpointId = int32_t;  ///< index into Topology::endpoints(); GPUs come first, id == rank
using LinkId = int32_t;      ///< index into Topology::links()

/// What an endpoint of the link graph is. Only switches, CPUs and NICs forward traffic: a GPU
/// is never the middle of a route (NVLink peers do not relay, as on a DGX-1 where GPUs without
/// a direct NVLink talk through PCIe and the CPUs).
enum class EndpointKind : uint8_t { kGpu, kSwitch, kCpu, kNic };

/// "gpu", "switch", "cpu", "nic".
std::string_view endpoint_kind_name(EndpointKind kind);

/// The most links a topology may expand to, all entries over all nodes together: 4 M (~160 MB).
/// 4,096 GPUs of 8 per node, NVLink all to all and eight rails to a two-level fat tree need
/// under 100 K; a small file that expands past this is refused rather than left to exhaust
/// memory and the routing.
inline constexpr size_t kMaxTopologyLinks = size_t{1} << 22;

/// Compute-type names accepted in `peak_flops`, in their canonical (output) order.
inline constexpr std::string_view kComputeTypes[] = {"f64", "f32", "tf32", "bf16",
                                                     "f16", "f8",  "i8",   "i4"};

/// A kind of accelerator, as a device type of the JSON form describes it.
struct DeviceType {
  std::string name;             ///< key in `device_types`, e.g. "h100-sxm"
  std::string model;            ///< marketing name, e.g. "NVIDIA H100 SXM5 80GB"
  int64_t memory_bytes = 0;     ///< device memory, bytes
  double memory_bandwidth = 0;  ///< device memory bandwidth, bytes/s
  /// Dense peak FLOP/s (OP/s for integer types) per compute type, in kComputeTypes order; a
  /// type that is absent is not supported natively.
  std::vector<std::pair<std::string, double>> peak_flops;
  /// Streaming multiprocessors (datasheet); 0 when unknown. The kernel model's wave
  /// quantisation uses it (108 when unknown).
  int sm_count = 0;

  /// Peak FLOP/s for a compute type name ("bf16"), or 0 when the device lacks it.
  double flops(std::string_view compute_type) const;
  /// Peak FLOP/s for a tensor element type (f32 means plain FP32, not TF32), or 0.
  double flops(ir::DType dtype) const;

  bool operator==(const DeviceType&) const = default;
};

/// A vertex of the link graph.
struct Endpoint {
  EndpointKind kind = EndpointKind::kGpu;
  std::string name;      ///< unique: "node3/gpu5", "node0/nvswitch", "network/ib"
  int32_t node = -1;     ///< node index, or -1 for a switch of the network between nodes
  DeviceId device = -1;  ///< rank for a GPU, -1 otherwise

  bool operator==(const Endpoint&) const = default;
};

/// A full-duplex link. Bandwidth is per direction: both directions can carry it at once.
struct Link {
  EndpointId a = 0;  ///< the endpoints, in the order the JSON named them
  EndpointId b = 0;
  double bandwidth = 0;  ///< bytes/s per direction (a link type's bandwidth times `count`)
  double latency = 0;    ///< seconds, one way
  std::string type;      ///< the link type's name ("nvlink4"), or "" for an inline link

  /// The endpoint at the other end from `e` (which must be a or b).
  EndpointId other(EndpointId e) const { return e == a ? b : a; }
  bool operator==(const Link&) const = default;
};

/// A GPU: what the planner places work on.
struct Device {
  std::string name;         ///< endpoint name, "node1/gpu3"
  int32_t type = 0;         ///< index into Topology::device_types()
  int32_t node = 0;         ///< node index
  int32_t local_index = 0;  ///< index inside its node (CUDA device ordinal / LOCAL_RANK)
  bool operator==(const Device&) const = default;
};

/// A machine: the GPUs that share a host.
struct Node {
  std::string name;           ///< "node0"
  int32_t group = 0;          ///< index of the `nodes[]` entry of the JSON form it came from
  DeviceId first_device = 0;  ///< its GPUs are ranks [first_device, first_device + num_devices)
  int32_t num_devices = 0;
  bool operator==(const Node&) const = default;
};

/// A route between two GPUs: the links in order from source to destination.
struct Route {
  std::vector<LinkId> links;
  /// Per link, whether the route crosses it from its `a` to its `b` (a full-duplex link is two
  /// resources to a simulator, one per direction).
  std::vector<bool> forward;
  double bandwidth = 0;  ///< the lowest link bandwidth on the way (infinite for a GPU to itself)
  double latency = 0;    ///< the sum of the link latencies
};

/// One level of the interconnect hierarchy: a partition of all GPUs into groups, joined by the
/// links of this level. Levels run from the top (groups joined by the slowest links, such as
/// nodes over the network) to the bottom (single GPUs); SoyBean maps its first cut onto the top.
struct TopologyLevel {
  /// The groups, each a list of ascending ranks; groups are ordered by their first rank.
  std::vector<std::vector<DeviceId>> groups;
  /// The lowest route bandwidth between two GPUs that are in different groups of this level but
  /// the same group of the level above: what a cut at this level pays.
  double bandwidth = 0;
  /// The highest route latency between such GPUs.
  double latency = 0;
  bool operator==(const TopologyLevel&) const = default;
};

/// An expanded cluster: a value, cheap to query, built only by the loaders below.
class Topology {
 public:
  /// Name from the JSON form ("dgx-h100").
  const std::string& name() const { return name_; }
  /// One-line description from the JSON form, possibly empty.
  const std::string& description() const { return description_; }

  /// How many GPUs: ranks are 0 .. num_devices() - 1.
  int num_devices() const { return static_cast<int>(devices_.size()); }
  /// How many nodes (machines).
  int num_nodes() const { return static_cast<int>(nodes_.size()); }

  /// The device types, in the order the JSON form defines them.
  const std::vector<DeviceType>& device_types() const { return device_types_; }
  /// The GPUs, in rank order (node-major).
  const std::vector<Device>& devices() const { return devices_; }
  /// The nodes, in order.
  const std::vector<Node>& nodes() const { return nodes_; }
  /// The vertices of the link graph: the GPUs (endpoint id == rank), then each node's switches,
  /// CPUs and NICs, then the network's switches.
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  /// The links, in the order the JSON form's entries expand to them.
  const std::vector<Link>& links() const { return links_; }
  /// The GPU of rank `d`. Precondition (checked): 0 <= d < num_devices(), as for every query
  /// below that takes a DeviceId.
  const Device& device(DeviceId d) const { return check_device(d), devices_[d]; }
  /// The type of the GPU of rank `d`.
  const DeviceType& device_type(DeviceId d) const { return device_types_[device(d).type]; }

  /// Whether two GPUs are in the same node.
  bool same_node(DeviceId a, DeviceId b) const { return device(a).node == device(b).node; }

  /// The route from `from` to `to`: the least total latency, then the fewest links, then the
  /// widest bottleneck, then a fixed tie-break on link ids; a GPU is never in the middle of it.
  /// route(b, a) is route(a, b) reversed. route(a, a) is empty, with infinite bandwidth.
  Route route(DeviceId from, DeviceId to) const;
  /// Appends the hops of route(from, to) as (link, crosses it from its `a` side) pairs, in no
  /// particular order, without building a Route (for hot loops that reuse `out`).
  void append_hops(DeviceId from, DeviceId to, std::vector<std::pair<LinkId, bool>>& out) const;
  /// route(from, to).bandwidth without building the route.
  double bandwidth(DeviceId from, DeviceId to) const;
  /// route(from, to).latency without building the route.
  double latency(DeviceId from, DeviceId to) const;

  /// The interconnect hierarchy, top (slowest) first; see TopologyLevel.
  const std::vector<TopologyLevel>& levels() const { return levels_; }

  /// The compact JSON form this topology was loaded from, in canonical order.
  const nlohmann::ordered_json& compact_json() const { return compact_; }

  /// Equal expanded graphs, levels and compact forms (a round trip through JSON compares equal).
  bool operator==(const Topology&) const = default;

 private:
  Topology() = default;
  void check_device(DeviceId d) const {
    PLANNER_CHECK(d >= 0 && d < num_devices(), "device {} of a topology with {}", d, num_devices());
  }
  // The loader (importers/topology.cpp) is the only way to make one.
  friend Expected<Topology> build_topology(const nlohmann::ordered_json& root);

  // Calls f(link) for each link of the route between `from` and `to`, in either order, walking
  // from the higher rank back to the lower one.
  template <typename F>
  void walk(DeviceId from, DeviceId to, F&& f) const;
  /// Fills the route trees; returns the most links on a route between two GPUs, with the pair
  /// (lower rank first).
  struct LongestRoute {
    int32_t links = 0;
    DeviceId from = 0, to = 0;
  };
  LongestRoute compute_routes();
  void compute_levels();

  std::string name_;
  std::string description_;
  std::vector<DeviceType> device_types_;
  std::vector<Device> devices_;
  std::vector<Node> nodes_;
  std::vector<Endpoint> endpoints_;
  std::vector<Link> links_;
  std::vector<TopologyLevel> levels_;
  nlohmann::ordered_json compact_;
  // Shortest-path trees: pred_[s * endpoints + e] is the link through which the route from GPU s
  // reaches endpoint e (-1 for s itself and for endpoints it cannot reach). 4 bytes per GPU and
  // endpoint: about 9 MB for 1,024 H100s with their switches and NICs.
  std::vector<LinkId> pred_;
};

/// A built-in topology, as `planner topology list` shows it.
struct PresetInfo {
  std::string name;  ///< "dgx-h100"
  int num_devices = 0;
  int num_nodes = 0;
  std::string description;  ///< one line
};

/// Loads a topology from a JSON file. Errors name the file and the JSON path of the offending
/// field: "cluster.json: $.nodes[1].links[3].bandwidth: must be positive, got 0".
Expected<Topology> load_topology(const std::string& path);

/// Parses a topology from JSON text; `source_name` starts every error message.
Expected<Topology> parse_topology(const std::string& json_text, const std::string& source_name);

/// The built-in topologies, in the order `planner topology list` prints them.
std::vector<PresetInfo> topology_presets();

/// A built-in topology by name; an unknown name is an error with a suggestion and the list.
Expected<Topology> topology_preset(std::string_view name);

/// `num_gpus` H100 SXM GPUs, 8 to a DGX H100 node (the last node partial when num_gpus is not a
/// multiple of 8), nodes joined by 400 Gb/s InfiniBand NDR with one NIC per GPU.
/// Precondition: 1 <= num_gpus <= 4096 (the most any topology may have; resolve_topology checks).
Topology h100_cluster(int num_gpus);

/// The first `num_gpus` GPUs (ranks 0..num_gpus-1) of a topology, as a topology of its own
/// (trailing nodes dropped, the last node kept partially). An error when it has fewer GPUs.
Expected<Topology> first_devices(const Topology& topology, int num_gpus);

/// What the command line's --gpus and --topology mean together: `topology_arg` is a JSON file
/// (when it names an existing file or ends in ".json") or a preset name; with `gpus`, the first
/// that many GPUs of it. With only `gpus`, h100_cluster(gpus). With neither, an error.
Expected<Topology> resolve_topology(std::optional<int> gpus, const std::string& topology_arg);

/// The compact JSON form of a topology, deterministic; parse_topology reads it back into an
/// equal Topology.
nlohmann::ordered_json topology_to_json(const Topology& topology);

}  // namespace planner::importers
