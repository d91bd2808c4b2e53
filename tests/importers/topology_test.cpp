// Tests for importers/topology.cpp: the JSON form, its expansion, routes, levels and presets.
#include "importers/topology.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/test_util.h"

namespace planner::importers {
namespace {

// Two nodes of two GPUs under a switch, a NIC each, joined by one network switch.
const char* kBase = R"({
  "name": "t",
  "device_types": {"g": {"model": "G", "memory_bytes": 1000, "memory_bandwidth": 1e9,
                         "peak_flops": {"f32": 1e12, "bf16": 4e12}}},
  "nodes": [{"count": 2, "gpus": {"type": "g", "count": 2}, "switches": ["sw"], "nics": ["nic0"],
             "links": [{"from": "gpu*", "to": "sw", "bandwidth": 1e10, "latency": 1e-6},
                       {"from": "nic0", "to": "sw", "bandwidth": 1e10, "latency": 1e-6}]}],
  "network": {"switches": ["ib"],
              "links": [{"from": "nic*", "to": "ib", "bandwidth": 5e9, "latency": 2e-6}]}
})";

// kBase with `from` replaced by `to` (which must occur exactly once).
std::string with(const std::string& from, const std::string& to) {
  std::string text = kBase;
  size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "'", from, "' is not in the base text");
  REQUIRE_MESSAGE(text.find(from, at + 1) == std::string::npos, "'", from, "' occurs twice");
  return text.replace(at, from.size(), to);
}

// What went wrong, for a failed check's message.
template <typename T>
std::string why(const Expected<T>& e) {
  return e.has_value() ? std::string() : e.error().message();
}

// The error message parsing `text` gives, or "ok".
std::string error_of(const std::string& text) {
  auto topo = parse_topology(text, "t.json");
  return topo ? "ok" : topo.error().message();
}

Topology preset(std::string_view name) {
  auto topo = topology_preset(name);
  REQUIRE_MESSAGE(topo.has_value(), why(topo));
  return std::move(*topo);
}

// Endpoint names along a route, "a -> b -> c".
std::string route_names(const Topology& t, DeviceId a, DeviceId b) {
  std::string out = t.endpoints()[a].name;
  EndpointId at = a;
  for (LinkId l : t.route(a, b).links) {
    at = t.links()[l].other(at);
    out += " -> " + t.endpoints()[at].name;
  }
  return out;
}

TEST_CASE("an inline topology expands into GPUs, switches, NICs and links") {
  auto topo = parse_topology(kBase, "t.json");
  REQUIRE_MESSAGE(topo.has_value(), why(topo));
  CHECK(topo->name() == "t");
  CHECK(topo->num_devices() == 4);
  CHECK(topo->num_nodes() == 2);
  // GPUs first, node-major; then each node's other endpoints; then the network's.
  std::vector<std::string> names;
  for (const Endpoint& e : topo->endpoints()) names.push_back(e.name);
  CHECK(names == std::vector<std::string>{"node0/gpu0", "node0/gpu1", "node1/gpu0", "node1/gpu1",
                                          "node0/sw", "node0/nic0", "node1/sw", "node1/nic0",
                                          "network/ib"});
  CHECK(topo->device(3).node == 1);
  CHECK(topo->device(3).local_index == 1);
  CHECK(topo->nodes()[1].first_device == 2);
  CHECK(topo->links().size() == 3 * 2 + 2);
  CHECK(topo->device_type(0).flops("bf16") == 4e12);
  CHECK(topo->device_type(0).flops(ir::DType::kFloat32) == 1e12);
  CHECK(topo->device_type(0).flops("f16") == 0);

  CHECK(topo->same_node(0, 1));
  CHECK_FALSE(topo->same_node(1, 2));
  CHECK(route_names(*topo, 0, 1) == "node0/gpu0 -> node0/sw -> node0/gpu1");
  CHECK(topo->bandwidth(0, 1) == 1e10);
  CHECK(topo->latency(0, 1) == doctest::Approx(2e-6));
  CHECK(
      route_names(*topo, 1, 3) ==
      "node0/gpu1 -> node0/sw -> node0/nic0 -> network/ib -> node1/nic0 -> node1/sw -> node1/gpu1");
  Route r = topo->route(1, 3);
  CHECK(r.bandwidth == 5e9);
  CHECK(r.latency == doctest::Approx(8e-6));
  // The way back uses the same links in reverse.
  Route back = topo->route(3, 1);
  CHECK(std::vector<LinkId>(back.links.rbegin(), back.links.rend()) == r.links);
  CHECK(back.latency == r.latency);
  // Every link of the base is written GPU/NIC first, so going up is forward and coming down is not.
  CHECK(r.forward == std::vector<bool>{true, false, true, false, true, false});
  CHECK(back.forward == std::vector<bool>{true, false, true, false, true, false});
  CHECK(topo->route(2, 2).links.empty());

  REQUIRE(topo->levels().size() == 2);
  CHECK(topo->levels()[0].groups == std::vector<std::vector<DeviceId>>{{0, 1}, {2, 3}});
  CHECK(topo->levels()[0].bandwidth == 5e9);
  CHECK(topo->levels()[1].groups.size() == 4);
  CHECK(topo->levels()[1].bandwidth == 1e10);
}

TEST_CASE("selectors: ranges, arrays, every pair, one to one, parallel lanes") {
  auto topo = parse_topology(R"({"name": "s",
    "device_types": {"g": {"model": "G", "memory_bytes": 1, "memory_bandwidth": 1,
                           "peak_flops": {"f32": 1}}},
    "link_types": {"nv": {"bandwidth": 2.5e10, "latency": 1e-6}},
    "nodes": [{"gpus": {"type": "g", "count": 4}, "nics": ["nic[0-3]"],
               "links": [{"from": "gpu*", "to": "gpu*", "type": "nv"},
                         {"from": "gpu0", "to": ["gpu1", "gpu2"], "type": "nv", "count": 2},
                         {"from": "gpu[0-3]", "to": "nic*", "type": "nv", "one_to_one": true}]}]})",
                             "s.json");
  REQUIRE_MESSAGE(topo.has_value(), why(topo));
  CHECK(topo->links().size() == 6 + 2 + 4);
  CHECK(topo->links()[6].bandwidth == 5e10);
  CHECK(topo->links()[6].type == "nv");
  CHECK(topo->endpoints()[topo->links()[9].b].name == "node0/nic1");
  // Parallel links: the wider of the two equally short ones.
  CHECK(topo->bandwidth(0, 1) == 5e10);
  CHECK(topo->bandwidth(0, 3) == 2.5e10);
  // A GPU never relays: gpu3 -> gpu1 is direct even though nothing else could carry it.
  CHECK(topo->route(3, 1).links.size() == 1);
}

TEST_CASE("every preset loads, with its counts, and round-trips through its JSON form") {
  struct Expect {
    const char* name;
    int gpus, nodes;
  };
  const Expect expected[] = {{"dgx-h100", 8, 1},
                             {"h100-cluster-4x8", 32, 4},
                             {"dgx-a100", 8, 1},
                             {"pcie-4gpu", 4, 1},
                             {"p2.8xlarge", 8, 1},
                             {"flexflow-p100-4x4", 16, 4},
                             {"flexflow-k80-16x4", 64, 16},
                             {"tensoropt-v100-2x8", 16, 2},
                             {"dgx1-v100", 8, 1},
                             {"dgx1-v100-32gb", 8, 1}};
  std::vector<PresetInfo> presets = topology_presets();
  REQUIRE(presets.size() == std::size(expected));
  for (size_t i = 0; i < presets.size(); ++i) {
    CAPTURE(presets[i].name);
    CHECK(presets[i].name == expected[i].name);
    CHECK(presets[i].num_devices == expected[i].gpus);
    CHECK(presets[i].num_nodes == expected[i].nodes);
    CHECK_FALSE(presets[i].description.empty());
    Topology topo = preset(presets[i].name);
    CHECK(topo.num_devices() == expected[i].gpus);
    CHECK(topo.num_nodes() == expected[i].nodes);
    // The top level of a multi-node cluster is its nodes: SoyBean's first cut goes there.
    REQUIRE_FALSE(topo.levels().empty());
    if (expected[i].nodes > 1) CHECK(topo.levels()[0].groups.size() == size_t(expected[i].nodes));
    CHECK(topo.levels().back().groups.size() == size_t(expected[i].gpus));
    std::string text = topology_to_json(topo).dump(2);
    auto again = parse_topology(text, "round-trip");
    REQUIRE_MESSAGE(again.has_value(), why(again));
    CHECK(*again == topo);
    CHECK(topology_to_json(*again).dump(2) == text);
  }
}

TEST_CASE("H100 cluster: NVSwitch inside a node, InfiniBand between nodes") {
  Topology t = preset("h100-cluster-4x8");
  CHECK(t.device_type(0).model == "NVIDIA H100 SXM5 80GB");
  CHECK(t.device_type(0).memory_bytes == 80LL << 30);
  CHECK(t.device_type(0).flops("bf16") == 989.4e12);
  CHECK(t.bandwidth(0, 7) == 450e9);
  CHECK(t.route(0, 7).links.size() == 2);
  CHECK(t.latency(0, 7) == doctest::Approx(1e-6));
  CHECK(t.bandwidth(3, 8 + 5) == 50e9);
  CHECK(route_names(t, 3, 13) ==
        "node0/gpu3 -> node0/nic3 -> network/ib -> node1/nic5 -> node1/gpu5");
  CHECK(t.latency(3, 13) == doctest::Approx(3e-6));
  REQUIRE(t.levels().size() == 2);
  CHECK(t.levels()[0].groups.size() == 4);
  CHECK(t.levels()[0].groups[1].front() == 8);
  CHECK(t.levels()[0].bandwidth == 50e9);
  CHECK(t.levels()[1].groups.size() == 32);
  CHECK(t.levels()[1].bandwidth == 450e9);
}

TEST_CASE("p2.8xlarge: K80 pairs on a PCIe switch, through the host between boards and sockets") {
  Topology t = preset("p2.8xlarge");
  CHECK(route_names(t, 0, 1) == "node0/gpu0 -> node0/plx0 -> node0/gpu1");
  CHECK(t.bandwidth(0, 1) == 10.5e9);
  CHECK(route_names(t, 1, 2) ==
        "node0/gpu1 -> node0/plx0 -> node0/cpu0 -> node0/plx1 -> node0/gpu2");
  CHECK(t.bandwidth(1, 2) == 10e9);
  CHECK(route_names(t, 0, 7) ==
        "node0/gpu0 -> node0/plx0 -> node0/cpu0 -> node0/cpu1 -> node0/plx3 -> node0/gpu7");
  CHECK(t.latency(0, 7) == doctest::Approx(3e-6));
  REQUIRE(t.levels().size() == 3);
  CHECK(t.levels()[0].groups == std::vector<std::vector<DeviceId>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(t.levels()[1].groups.size() == 4);
  CHECK(t.levels()[2].groups.size() == 8);
  CHECK(t.levels()[2].bandwidth == 10.5e9);
}

TEST_CASE("DGX-1 hybrid cube mesh: no NVLink relaying; levels find the quads") {
  Topology t = preset("tensoropt-v100-2x8");
  CHECK(t.bandwidth(0, 3) == 50e9);  // two NVLinks
  CHECK(t.bandwidth(0, 1) == 25e9);  // one
  // gpu0 and gpu5 share no NVLink; the route goes through PCIe and QPI, not through a GPU.
  CHECK(route_names(t, 0, 5) ==
        "node0/gpu0 -> node0/plx0 -> node0/cpu0 -> node0/cpu1 -> node0/plx2 -> node0/gpu5");
  CHECK(t.bandwidth(0, 5) == 15.75e9);
  CHECK(t.bandwidth(0, 8) == 12.5e9);
  REQUIRE(t.levels().size() == 4);
  CHECK(t.levels()[1].groups == std::vector<std::vector<DeviceId>>{
                                    {0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}});
  CHECK(t.levels()[2].groups[0] == std::vector<DeviceId>{0, 3});
}

TEST_CASE("h100_cluster: 8 GPUs to a node, the last one partial") {
  Topology t = h100_cluster(12);
  CHECK(t.name() == "h100x12");
  CHECK(t.num_devices() == 12);
  CHECK(t.num_nodes() == 2);
  CHECK(t.nodes()[1].num_devices == 4);
  CHECK(t.device(11).name == "node1/gpu3");
  CHECK(t.bandwidth(0, 11) == 50e9);
  // node1's unused GPUs are gone with their links; its NICs stay on the network.
  CHECK(t.links().size() == (8 + 8) + (4 + 4) + 16);
  auto again = parse_topology(topology_to_json(t).dump(), "round-trip");
  REQUIRE(again.has_value());
  CHECK(*again == t);

  CHECK(h100_cluster(16).name() == "h100x16");
  CHECK(h100_cluster(16).num_nodes() == 2);
  CHECK(h100_cluster(1).num_devices() == 1);
  CHECK(h100_cluster(1).levels().empty());
}

TEST_CASE("first_devices keeps a heterogeneous cluster's network valid") {
  // Two kinds of node with differently named NICs; the first 3 GPUs leave no "eth" NIC.
  auto topo = parse_topology(R"({"name": "mixed",
    "device_types": {"a": {"model": "A", "memory_bytes": 1, "memory_bandwidth": 1,
                           "peak_flops": {"f32": 1}},
                     "b": {"model": "B", "memory_bytes": 1, "memory_bandwidth": 1,
                           "peak_flops": {"f16": 1}}},
    "link_types": {"l": {"bandwidth": 1e10, "latency": 1e-6}},
    "nodes": [{"count": 2, "gpus": {"type": "a", "count": 2}, "switches": ["sw"], "nics": ["nic0"],
               "links": [{"from": ["gpu*", "nic0"], "to": "sw", "type": "l"}]},
              {"gpus": {"type": "b", "count": 2}, "switches": ["sw"], "nics": ["eth0"],
               "links": [{"from": ["gpu*", "eth0"], "to": "sw", "type": "l"}]}],
    "network": {"switches": ["core"],
                "links": [{"from": ["nic*", "eth*"], "to": "core", "type": "l"},
                          {"from": "eth0", "to": "core", "type": "l", "count": 2}]}})",
                             "mixed.json");
  REQUIRE_MESSAGE(topo.has_value(), why(topo));
  CHECK(topo->num_devices() == 6);
  CHECK(topo->device_type(5).model == "B");
  auto first = first_devices(*topo, 3);
  REQUIRE_MESSAGE(first.has_value(), why(first));
  CHECK(first->num_nodes() == 2);
  CHECK(topology_to_json(*first)["network"]["links"].dump() ==
        R"([{"from":["nic*"],"to":"core","type":"l"}])");
  CHECK(first->bandwidth(0, 2) == 1e10);
}

TEST_CASE("resolve_topology: --gpus, --topology, and both") {
  CHECK(resolve_topology(std::nullopt, "").error().message() ==
        "no topology given: name a preset or a topology file, or a number of GPUs");
  CHECK(resolve_topology(12, "")->num_devices() == 12);
  CHECK(resolve_topology(std::nullopt, "dgx-a100")->name() == "dgx-a100");
  auto first = resolve_topology(6, "flexflow-p100-4x4");
  REQUIRE(first.has_value());
  CHECK(first->name() == "flexflow-p100-4x4-first-6");
  CHECK(first->num_devices() == 6);
  CHECK(first->num_nodes() == 2);
  CHECK(first->nodes()[1].num_devices == 2);
  CHECK(resolve_topology(20, "flexflow-p100-4x4").error().message() ==
        "topology 'flexflow-p100-4x4' has 16 GPUs, fewer than the 20 asked for");
  CHECK(resolve_topology(std::nullopt, "dgx-h10").error().message() ==
        "unknown topology 'dgx-h10', did you mean 'dgx-h100'? (presets: dgx-h100, "
        "h100-cluster-4x8, dgx-a100, pcie-4gpu, p2.8xlarge, flexflow-p100-4x4, flexflow-k80-16x4, "
        "tensoropt-v100-2x8, dgx1-v100, dgx1-v100-32gb)");
  CHECK(resolve_topology(std::nullopt, "no/such.json").error().message() ==
        "no/such.json: no such file");

  // A file, by path, with --gpus.
  auto dir = std::filesystem::temp_directory_path() / "planner_topology_test";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "t.json").string();
  std::ofstream(path) << kBase;
  auto file = resolve_topology(3, path);
  REQUIRE_MESSAGE(file.has_value(), why(file));
  CHECK(file->num_devices() == 3);
  CHECK(load_topology(path)->num_devices() == 4);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the shipped example files load") {
  auto dir = testing::source_dir() / "examples" / "topologies";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    CAPTURE(entry.path().string());
    auto topo = load_topology(entry.path().string());
    CHECK_MESSAGE(topo.has_value(), why(topo));
    ++count;
  }
  CHECK(count >= 2);
  // The written-out p2.8xlarge is the preset.
  auto p2 = load_topology((dir / "p2.8xlarge.json").string());
  REQUIRE(p2.has_value());
  CHECK(*p2 == preset("p2.8xlarge"));
}

TEST_CASE("a small file that expands past 4 M links is refused, naming the entry") {
  // 1,000 switches all to all in each of 9 nodes: 4.5 M links from 10 KB of JSON.
  std::string names = R"("sw")";
  for (int i = 0; i < 1000; ++i) names += fmt::format(", \"s{}\"", i);
  std::string text = with(R"("count": 2, "gpus")", R"("count": 9, "gpus")");
  const std::string one = R"("switches": ["sw"])";
  text.replace(text.find(one), one.size(), R"("switches": [)" + names + "]");
  const std::string many = [&] {
    std::string t = text;
    const std::string link = R"({"from": "nic0", "to": "sw", "bandwidth": 1e10, "latency": 1e-6})";
    const size_t at = t.find(link);
    REQUIRE(at != std::string::npos);
    return t.insert(at + link.size(),
                    R"(, {"from": "s*", "to": "s*", "bandwidth": 1e10, "latency": 1e-6})");
  }();
  const std::string error = error_of(many);
  CAPTURE(error);
  CHECK(error.rfind("t.json: $.nodes[0].links[2]: makes 4495500 links, 4495527 in all", 0) == 0);
  CHECK(error.find("more than the 4194304 a topology may expand to") != std::string::npos);
  CHECK(error_of(text) == "ok");  // the same switches without the all-to-all entry
}

TEST_CASE("a chain of switches whose routes pass 64 links is refused at once, naming the pair") {
  // One GPU per node, each node's NIC on its own network switch, the switches in a chain: the
  // route between the ends has `switches` + 3 links. Levels walk every pair's route, so 4,096
  // such switches took hours before routes were bounded.
  auto chain = [](int switches) {
    std::string names;
    for (int i = 0; i < switches; ++i) names += fmt::format("{}\"s{}\"", i ? ", " : "", i);
    return fmt::format(
        R"({{"name": "chain", "device_types": {{"g": {{"model": "G", "memory_bytes": 1000,
        "memory_bandwidth": 1e9, "peak_flops": {{"f32": 1e12}}}}}},
        "nodes": [{{"count": {0}, "gpus": {{"type": "g", "count": 1}}, "nics": ["nic0"],
                   "links": [{{"from": "gpu0", "to": "nic0", "bandwidth": 1e10, "latency": 1e-6}}]}}],
        "network": {{"switches": [{1}], "links": [
          {{"from": "nic*", "to": "s*", "one_to_one": true, "bandwidth": 1e10, "latency": 1e-6}},
          {{"from": "s[0-{2}]", "to": "s[1-{3}]", "one_to_one": true, "bandwidth": 1e10,
           "latency": 1e-6}}]}}}})",
        switches, names, switches - 2, switches - 1);
  };
  CHECK(error_of(chain(61)) == "ok");  // 64 links between the ends
  CHECK(error_of(chain(62)) ==
        "t.json: devices node0/gpu0 and node61/gpu0 are 65 links apart; routes of more than 64 "
        "links are not supported (a cluster's network has fewer than 16)");
  const std::string error = error_of(chain(4096));
  CHECK(error.find("are 4099 links apart") != std::string::npos);
}

TEST_CASE("errors name the file and the JSON path of the offending field") {
  CHECK(error_of(kBase) == "ok");
  // Values that must be positive.
  CHECK(error_of(with(R"("bandwidth": 1e10, "latency": 1e-6},
                       {"from": "nic0")",
                      R"("bandwidth": 0, "latency": 1e-6},
                       {"from": "nic0")")) ==
        "t.json: $.nodes[0].links[0].bandwidth: must be positive, got 0");
  CHECK(error_of(with(R"("bandwidth": 5e9, "latency": 2e-6)",
                      R"("bandwidth": 5e9, "latency": -2e-6)")) ==
        "t.json: $.network.links[0].latency: must be positive, got -2e-06");
  CHECK(error_of(with(R"("memory_bytes": 1000)", R"("memory_bytes": 0)")) ==
        "t.json: $.device_types.g.memory_bytes: must be positive, got 0");
  CHECK(error_of(with(R"("memory_bytes": 1000)", R"("memory_bytes": 1.5)")) ==
        "t.json: $.device_types.g.memory_bytes: expected an integer, got 1.5");
  CHECK(error_of(with(R"("bf16": 4e12)", R"("bf16": -4e12)")) ==
        "t.json: $.device_types.g.peak_flops.bf16: must be positive, got -4000000000000.0");
  CHECK(error_of(with(R"("memory_bandwidth": 1e9)", R"("memory_bandwidth": 0.0)")) ==
        "t.json: $.device_types.g.memory_bandwidth: must be positive, got 0.0");

  // Links to endpoints that do not exist.
  CHECK(error_of(with(R"({"from": "nic0", "to": "sw")", R"({"from": "nic0", "to": "sw1")")) ==
        "t.json: $.nodes[0].links[1].to: no endpoint named 'sw1' in this node, did you mean 'sw'?");
  CHECK(error_of(with(R"("from": "gpu*")", R"("from": "gpu[0-2]")")) ==
        "t.json: $.nodes[0].links[0].from: no endpoint named 'gpu2' in this node, did you mean "
        "'gpu0'?");
  CHECK(error_of(with(R"("from": "nic*", "to": "ib")", R"("from": "nics*", "to": "ib")")) ==
        "t.json: $.network.links[0].from: 'nics*' matches no network switch and no endpoint of any "
        "node, did you mean 'nic0'?");
  CHECK(error_of(with(R"("from": "nic*", "to": "ib")", R"("from": "ib", "to": "ib")")) ==
        "t.json: $.network.links[0]: connects no two distinct endpoints");
  CHECK(
      error_of(with(R"("to": "sw", "bandwidth": 1e10, "latency": 1e-6},)",
                    R"("to": "nic0", "one_to_one": true, "bandwidth": 1e10, "latency": 1e-6},)")) ==
      "t.json: $.nodes[0].links[0]: one_to_one needs as many 'from' as 'to' endpoints, got 2 and "
      "1");
  CHECK(error_of(with(R"("switches": ["sw"])", R"("switches": ["sw", "gpu1"])")) ==
        "t.json: $.nodes[0].switches[1]: duplicate endpoint name 'gpu1'");
  CHECK(
      error_of(with(R"("switches": ["sw"])", R"("switches": ["s w"])")) ==
      "t.json: $.nodes[0].switches[0]: invalid name 's w': use letters, digits, '_', '-' and '.', "
      "starting with a letter");

  // Devices that cannot reach each other.
  CHECK(error_of(with(R"("network": {"switches": ["ib"],
              "links": [{"from": "nic*", "to": "ib", "bandwidth": 5e9, "latency": 2e-6}]})",
                      R"("network": {"switches": ["ib"]})")) ==
        "t.json: devices node0/gpu0 and node1/gpu0 cannot reach each other (nodes need a 'network' "
        "to reach each other)");
  CHECK(error_of(with(R"({"from": "gpu*", "to": "sw")", R"({"from": "gpu0", "to": "sw")")) ==
        "t.json: devices node0/gpu0 and node0/gpu1 cannot reach each other");

  // Missing fields, wrong types, unknown fields and names.
  CHECK(error_of(with(R"("memory_bytes": 1000, )", "")) ==
        "t.json: $.device_types.g: missing field 'memory_bytes'");
  CHECK(error_of(with(R"("name": "t",)", "")) == "t.json: $: missing field 'name'");
  CHECK(error_of(with(R"("count": 2, "gpus")", R"("count": "2", "gpus")")) ==
        "t.json: $.nodes[0].count: expected an integer, got string \"2\"");
  CHECK(error_of(with(R"("switches": ["ib"],)", R"("switches": "ib",)")) ==
        "t.json: $.network.switches: expected an array, got string \"ib\"");
  CHECK(error_of(with(R"("nics": ["nic0"],)", R"("nics": ["nic0"], "linkz": [],)")) ==
        "t.json: $.nodes[0].linkz: unknown field, did you mean 'links'?");
  CHECK(error_of(with(R"("nics": ["nic0"],)", R"("nics": ["nic0"], "colour": 1,)")) ==
        "t.json: $.nodes[0].colour: unknown field");
  CHECK(error_of(with(R"("bf16": 4e12)", R"("fp16": 4e12)")) ==
        "t.json: $.device_types.g.peak_flops.fp16: unknown compute type, did you mean 'f16'? "
        "(known: f64, f32, tf32, bf16, f16, f8, i8, i4)");
  CHECK(error_of(with(R"("type": "g")", R"("type": "h")")) ==
        "t.json: $.nodes[0].gpus.type: unknown device type 'h', did you mean 'g'?");
  CHECK(error_of(with(R"({"from": "nic0", "to": "sw", "bandwidth": 1e10, "latency": 1e-6})",
                      R"({"from": "nic0", "to": "sw", "type": "pci"})")) ==
        "t.json: $.nodes[0].links[1].type: unknown link type 'pci'");
  CHECK(error_of(with(R"({"from": "nic0", "to": "sw", "bandwidth": 1e10, "latency": 1e-6})",
                      R"({"from": "nic0", "to": "sw", "bandwidth": 1e10})")) ==
        "t.json: $.nodes[0].links[1]: missing field 'latency'");
  CHECK(error_of(with(R"("count": 2})", R"("count": 2, "use": 3})")) ==
        "t.json: $.nodes[0].gpus.use: must be at most count (2), got 3");

  // Sizes the route tables could not hold.
  CHECK(error_of(with(R"("count": 2, "gpus")", R"("count": 2049, "gpus")")) ==
        "t.json: $.nodes: too many GPUs (at most 4096 are supported)");
  std::string big = with(R"("count": 2, "gpus")", R"("count": 2000, "gpus")");
  big.replace(big.find(R"(["sw"])"), 6, R"(["sw", "x[0-9]"])");
  CHECK(error_of(big) ==
        "t.json: too large: 4000 GPUs x 28001 endpoints exceeds the 67108864 route entries "
        "supported");

  // Invalid JSON: where, with line and column.
  CHECK(
      error_of("{\n  \"name\": \"t\",\n}") ==
      "t.json:3:1: invalid JSON: syntax error while parsing object key - unexpected '}'; expected "
      "string literal");
  CHECK(error_of("[1, 2]") == "t.json: $: expected an object, got an array");
  CHECK(load_topology("no/such/file.json").error().message() == "no/such/file.json: no such file");

  // Bounds: 65,536 nested levels crashed the error message's rendering; 1e400 was "internal".
  CHECK(error_of("{\"name\": " + std::string(65536, '[')) ==
        "t.json:1:137: invalid JSON: nested deeper than 128 levels");
  CHECK(error_of(with(R"("count": 2, "gpus")", R"("count": 1e400, "gpus")"))
            .find("invalid JSON: number 1e400 is out of range") != std::string::npos);
  CHECK(error_of(R"({"name": [[[[1]]]]})") == "t.json: $.name: expected a string, got an array");
  CHECK(load_topology("/dev/zero").error().message() ==
        "/dev/zero: is a character device, not a regular file");
}

}  // namespace
}  // namespace planner::importers
