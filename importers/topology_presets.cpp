// The built-in topologies: published figures for each GPU and link, and the clusters of the
// papers and of today, each written in the topology JSON form.
//
// Sources (dense peak rates; NVIDIA's datasheets quote tensor-core rates "with sparsity", twice
// these):
//   H100 SXM5 80GB   NVIDIA H100 Tensor Core GPU datasheet (2023): FP64 tensor 67 TF, FP32 67 TF,
//                    TF32 494.7 TF, BF16/FP16 989.4 TF, FP8/INT8 1,978.9 T; 80 GB HBM3 at
//                    3.35 TB/s; NVLink4 900 GB/s per GPU (18 links x 25 GB/s per direction).
//   A100 SXM4 80GB   NVIDIA A100 datasheet (2021): FP64 tensor 19.5 TF, FP32 19.5 TF, TF32 156 TF,
//                    BF16/FP16 312 TF, INT8 624 T, INT4 1,248 T; HBM2e 2,039 GB/s (SXM) and
//                    1,935 GB/s (PCIe); NVLink3 600 GB/s per GPU (12 links x 25 GB/s per
//                    direction).
//   V100 SXM2 16/32GB NVIDIA V100 datasheet: FP64 7.8 TF, FP32 15.7 TF, tensor FP16 125 TF; HBM2
//                    900 GB/s; NVLink2 300 GB/s per GPU (6 links x 25 GB/s per direction).
//   P100 SXM2 16GB   NVIDIA P100 datasheet: FP64 5.3 TF, FP32 10.6 TF, FP16 21.2 TF; HBM2 732 GB/s;
//                    NVLink1 160 GB/s per GPU (4 links x 20 GB/s per direction).
//   K80              NVIDIA K80 datasheet, per board with GPU Boost: FP64 2.91 TF, FP32 8.73 TF,
//                    24 GB GDDR5 at 480 GB/s; a board holds two GK210 GPUs, which are the devices.
//   PCIe             3.0 / 4.0 / 5.0 x16: 15.75 / 31.5 / 63 GB/s per direction (PCI-SIG).
//   QPI              9.6 GT/s: 19.2 GB/s per direction (Intel Xeon E5 v3/v4 datasheets).
//   InfiniBand       FDR 56 Gb/s, EDR 100 Gb/s, HDR 200 Gb/s, NDR 400 Gb/s per port.
//   p2.8xlarge       Tofu section 7: 21 GB/s GPU peer-to-peer (SoyBean 5.1: "bi-directional"),
//                    10 GB/s CPU-GPU.
// Streaming multiprocessors: H100 SXM5 132, A100 108, V100 80, P100 56, GK210 13 (the same
// datasheets and NVIDIA's architecture whitepapers).
// Latencies are per link and are modelling estimates, not published figures: 0.5 us for a PCIe
// or NVSwitch hop, 1 us for a direct NVLink, a QPI crossing or a NIC-to-InfiniBand-switch hop.
#include "importers/topology_presets.h"

#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "support/expected.h"

namespace planner::importers::presets {
namespace {

using json = nlohmann::ordered_json;

// Device types, by the name a preset uses for them.
struct NamedJson {
  const char* name;
  const char* json_text;
};

constexpr NamedJson kDeviceTypes[] = {
    {"h100-sxm", R"({"model": "NVIDIA H100 SXM5 80GB", "sm_count": 132, "memory_bytes": 85899345920,
      "memory_bandwidth": 3.35e12,
      "peak_flops": {"f64": 6.7e13, "f32": 6.7e13, "tf32": 4.947e14, "bf16": 9.894e14,
                     "f16": 9.894e14, "f8": 1.9789e15, "i8": 1.9789e15}})"},
    {"a100-sxm4-80gb",
     R"({"model": "NVIDIA A100 SXM4 80GB", "sm_count": 108, "memory_bytes": 85899345920,
      "memory_bandwidth": 2.039e12,
      "peak_flops": {"f64": 1.95e13, "f32": 1.95e13, "tf32": 1.56e14, "bf16": 3.12e14,
                     "f16": 3.12e14, "i8": 6.24e14, "i4": 1.248e15}})"},
    {"a100-pcie-80gb",
     R"({"model": "NVIDIA A100 PCIe 80GB", "sm_count": 108, "memory_bytes": 85899345920,
      "memory_bandwidth": 1.935e12,
      "peak_flops": {"f64": 1.95e13, "f32": 1.95e13, "tf32": 1.56e14, "bf16": 3.12e14,
                     "f16": 3.12e14, "i8": 6.24e14, "i4": 1.248e15}})"},
    {"v100-sxm2-16gb",
     R"({"model": "NVIDIA Tesla V100 SXM2 16GB", "sm_count": 80, "memory_bytes": 17179869184,
      "memory_bandwidth": 9.0e11,
      "peak_flops": {"f64": 7.8e12, "f32": 1.57e13, "f16": 1.25e14}})"},
    {"v100-sxm2-32gb",
     R"({"model": "NVIDIA Tesla V100 SXM2 32GB", "sm_count": 80, "memory_bytes": 34359738368,
      "memory_bandwidth": 9.0e11,
      "peak_flops": {"f64": 7.8e12, "f32": 1.57e13, "f16": 1.25e14}})"},
    {"p100-sxm2-16gb",
     R"({"model": "NVIDIA Tesla P100 SXM2 16GB", "sm_count": 56, "memory_bytes": 17179869184,
      "memory_bandwidth": 7.32e11,
      "peak_flops": {"f64": 5.3e12, "f32": 1.06e13, "f16": 2.12e13}})"},
    {"k80",
     R"({"model": "NVIDIA Tesla K80, one GK210 GPU", "sm_count": 13, "memory_bytes": 12884901888,
      "memory_bandwidth": 2.4e11,
      "peak_flops": {"f64": 1.455e12, "f32": 4.365e12}})"},
};

// Link types: bandwidth in bytes/s per direction, latency in seconds.
constexpr NamedJson kLinkTypes[] = {
    {"nvlink4-switch", R"({"bandwidth": 4.5e11, "latency": 5e-7})"},
    {"nvlink3-switch", R"({"bandwidth": 3.0e11, "latency": 5e-7})"},
    {"nvlink2", R"({"bandwidth": 2.5e10, "latency": 1e-6})"},
    {"nvlink1", R"({"bandwidth": 2.0e10, "latency": 1e-6})"},
    {"pcie3", R"({"bandwidth": 1.575e10, "latency": 5e-7})"},
    {"pcie4", R"({"bandwidth": 3.15e10, "latency": 5e-7})"},
    {"pcie5", R"({"bandwidth": 6.3e10, "latency": 5e-7})"},
    {"pcie3-p2p", R"({"bandwidth": 1.05e10, "latency": 5e-7})"},
    {"pcie3-host", R"({"bandwidth": 1.0e10, "latency": 5e-7})"},
    {"qpi", R"({"bandwidth": 1.92e10, "latency": 1e-6})"},
    {"ib-fdr", R"({"bandwidth": 7.0e9, "latency": 1e-6})"},
    {"ib-edr", R"({"bandwidth": 1.25e10, "latency": 1e-6})"},
    {"ib-hdr", R"({"bandwidth": 2.5e10, "latency": 1e-6})"},
    {"ib-ndr", R"({"bandwidth": 5.0e10, "latency": 1e-6})"},
};

template <size_t N>
json from_table(const NamedJson (&table)[N], const char* name) {
  for (const NamedJson& entry : table)
    if (std::strcmp(entry.name, name) == 0) return json::parse(entry.json_text);
  PLANNER_CHECK(false, "preset table has no entry '{}'", name);
  return {};
}

// Assembles a topology from the shared tables and the preset's own nodes and network (JSON
// text, network "" for a single node).
json assemble(const std::string& name, const std::string& description,
              std::initializer_list<const char*> device_types,
              std::initializer_list<const char*> link_types, const std::string& nodes,
              const std::string& network) {
  json j = json::object();
  j["name"] = name;
  j["description"] = description;
  j["device_types"] = json::object();
  for (const char* t : device_types) j["device_types"][t] = from_table(kDeviceTypes, t);
  j["link_types"] = json::object();
  for (const char* t : link_types) j["link_types"][t] = from_table(kLinkTypes, t);
  j["nodes"] = json::parse(nodes);
  if (!network.empty()) j["network"] = json::parse(network);
  return j;
}

// A DGX H100: 8 GPUs on four NVSwitch chips, modelled as one switch with a 450 GB/s (per
// direction) port per GPU; a 400 Gb/s ConnectX-7 NIC per GPU behind a PCIe 5.0 switch.
std::string dgx_h100_nodes(int count) {
  return fmt::format(R"([{{"name": "dgx-h100", "count": {},
    "gpus": {{"type": "h100-sxm", "count": 8}},
    "switches": ["nvswitch"], "nics": ["nic[0-7]"],
    "links": [{{"from": "gpu*", "to": "nvswitch", "type": "nvlink4-switch"}},
              {{"from": "gpu*", "to": "nic*", "type": "pcie5", "one_to_one": true}}]}}])",
                     count);
}

// One non-blocking InfiniBand fabric, modelled as a single switch every NIC plugs into.
std::string ib_network(const char* link_type) {
  return fmt::format(
      R"({{"switches": ["ib"], "links": [{{"from": "nic*", "to": "ib", "type": "{}"}}]}})",
      link_type);
}

json dgx_h100() {
  return assemble("dgx-h100",
                  "DGX H100: 8 x H100 SXM5 80 GB on NVSwitch (NVLink4, 900 GB/s per GPU)",
                  {"h100-sxm"}, {"nvlink4-switch", "pcie5"}, dgx_h100_nodes(1), "");
}

json h100_cluster_4x8() {
  json j = h100_cluster_json(4);
  j["name"] = "h100-cluster-4x8";
  j["description"] = "4 x DGX H100 over 400 Gb/s InfiniBand NDR, one NIC per GPU";
  return j;
}

// A DGX A100: 8 GPUs on six NVSwitch chips (one switch, 300 GB/s per direction per GPU); eight
// 200 Gb/s ConnectX-6 compute NICs on PCIe 4.0.
json dgx_a100() {
  return assemble("dgx-a100",
                  "DGX A100: 8 x A100 SXM4 80 GB on NVSwitch (NVLink3, 600 GB/s per GPU)",
                  {"a100-sxm4-80gb"}, {"nvlink3-switch", "pcie4"}, R"([{"name": "dgx-a100",
    "gpus": {"type": "a100-sxm4-80gb", "count": 8},
    "switches": ["nvswitch"], "nics": ["nic[0-7]"],
    "links": [{"from": "gpu*", "to": "nvswitch", "type": "nvlink3-switch"},
              {"from": "gpu*", "to": "nic*", "type": "pcie4", "one_to_one": true}]}])",
                  "");
}

json pcie_4gpu() {
  return assemble("pcie-4gpu", "workstation: 4 x A100 PCIe 80 GB on one CPU's PCIe 4.0, no NVLink",
                  {"a100-pcie-80gb"}, {"pcie4"}, R"([{"name": "workstation",
    "gpus": {"type": "a100-pcie-80gb", "count": 4}, "cpus": ["cpu0"],
    "links": [{"from": "gpu*", "to": "cpu0", "type": "pcie4"}]}])",
                  "");
}

// p2.8xlarge (Tofu, SoyBean): four K80 boards, each a PCIe switch with two GK210 GPUs; two
// boards per CPU socket, sockets joined by QPI.
json p2_8xlarge() {
  return assemble("p2.8xlarge",
                  "AWS p2.8xlarge: 8 x K80 (GK210) on PCIe, two sockets over QPI (Tofu, SoyBean)",
                  {"k80"}, {"pcie3-p2p", "pcie3-host", "qpi"}, R"([{"name": "p2.8xlarge",
    "gpus": {"type": "k80", "count": 8},
    "switches": ["plx[0-3]"], "cpus": ["cpu[0-1]"],
    "links": [{"from": "gpu[0-1]", "to": "plx0", "type": "pcie3-p2p"},
              {"from": "gpu[2-3]", "to": "plx1", "type": "pcie3-p2p"},
              {"from": "gpu[4-5]", "to": "plx2", "type": "pcie3-p2p"},
              {"from": "gpu[6-7]", "to": "plx3", "type": "pcie3-p2p"},
              {"from": "plx[0-1]", "to": "cpu0", "type": "pcie3-host"},
              {"from": "plx[2-3]", "to": "cpu1", "type": "pcie3-host"},
              {"from": "cpu0", "to": "cpu1", "type": "qpi"}]}])",
                  "");
}

// FlexFlow's first cluster (Figure 6a): four P100s joined pairwise by NVLink, two per CPU socket
// on PCIe, one EDR NIC per node. The paper's "100GB/s EDR" is EDR's 100 Gb/s.
json flexflow_p100_4x4() {
  return assemble("flexflow-p100-4x4",
                  "4 nodes x 4 P100, NVLink inside, 100 Gb/s EDR InfiniBand between (FlexFlow)",
                  {"p100-sxm2-16gb"}, {"nvlink1", "pcie3", "qpi", "ib-edr"},
                  R"([{"name": "p100-node", "count": 4,
    "gpus": {"type": "p100-sxm2-16gb", "count": 4},
    "cpus": ["cpu[0-1]"], "nics": ["nic0"],
    "links": [{"from": "gpu*", "to": "gpu*", "type": "nvlink1"},
              {"from": "gpu[0-1]", "to": "cpu0", "type": "pcie3"},
              {"from": "gpu[2-3]", "to": "cpu1", "type": "pcie3"},
              {"from": "cpu0", "to": "cpu1", "type": "qpi"},
              {"from": "nic0", "to": "cpu0", "type": "pcie3"}]}])",
                  ib_network("ib-edr"));
}

// FlexFlow's second cluster (Figure 6b): per node two K80 boards (a PCIe switch and two GPUs
// each) under a shared PCIe switch on the first CPU. The paper's "56 GB/s EDR" is 56 Gb/s, FDR's
// rate.
json flexflow_k80_16x4() {
  return assemble("flexflow-k80-16x4",
                  "16 nodes x 4 K80 on PCIe switches, 56 Gb/s FDR InfiniBand between (FlexFlow)",
                  {"k80"}, {"pcie3", "qpi", "ib-fdr"}, R"([{"name": "k80-node", "count": 16,
    "gpus": {"type": "k80", "count": 4},
    "switches": ["plx[0-1]", "pcie"], "cpus": ["cpu[0-1]"], "nics": ["nic0"],
    "links": [{"from": "gpu[0-1]", "to": "plx0", "type": "pcie3"},
              {"from": "gpu[2-3]", "to": "plx1", "type": "pcie3"},
              {"from": "plx*", "to": "pcie", "type": "pcie3"},
              {"from": "pcie", "to": "cpu0", "type": "pcie3"},
              {"from": "cpu0", "to": "cpu1", "type": "qpi"},
              {"from": "nic0", "to": "pcie", "type": "pcie3"}]}])",
                  ib_network("ib-fdr"));
}

// A DGX-1 V100 node (also TensorOpt's machines): NVLink as a hybrid cube mesh (two fully
// connected quads, some pairs with two links, plus i <-> i+4), GPU pairs on PCIe switches under
// two sockets, `nics` NICs on the first switch.
std::string dgx1_v100_nodes(const char* gpu_type, int count) {
  return fmt::format(R"([{{"name": "v100-node", "count": {},
    "gpus": {{"type": "{}", "count": 8}},
    "switches": ["plx[0-3]"], "cpus": ["cpu[0-1]"], "nics": ["nic0"],
    "links": [{{"from": "gpu0", "to": ["gpu3", "gpu4"], "type": "nvlink2", "count": 2}},
              {{"from": "gpu1", "to": ["gpu2", "gpu5"], "type": "nvlink2", "count": 2}},
              {{"from": "gpu2", "to": "gpu3", "type": "nvlink2", "count": 2}},
              {{"from": "gpu4", "to": "gpu7", "type": "nvlink2", "count": 2}},
              {{"from": "gpu6", "to": ["gpu5", "gpu7"], "type": "nvlink2", "count": 2}},
              {{"from": "gpu0", "to": ["gpu1", "gpu2"], "type": "nvlink2"}},
              {{"from": "gpu1", "to": "gpu3", "type": "nvlink2"}},
              {{"from": "gpu4", "to": ["gpu5", "gpu6"], "type": "nvlink2"}},
              {{"from": "gpu5", "to": "gpu7", "type": "nvlink2"}},
              {{"from": "gpu2", "to": "gpu6", "type": "nvlink2"}},
              {{"from": "gpu3", "to": "gpu7", "type": "nvlink2"}},
              {{"from": "gpu[0-1]", "to": "plx0", "type": "pcie3"}},
              {{"from": "gpu[2-3]", "to": "plx1", "type": "pcie3"}},
              {{"from": "gpu[4-5]", "to": "plx2", "type": "pcie3"}},
              {{"from": "gpu[6-7]", "to": "plx3", "type": "pcie3"}},
              {{"from": "plx[0-1]", "to": "cpu0", "type": "pcie3"}},
              {{"from": "plx[2-3]", "to": "cpu1", "type": "pcie3"}},
              {{"from": "cpu0", "to": "cpu1", "type": "qpi"}},
              {{"from": "nic0", "to": "plx0", "type": "pcie3"}}]}}])",
                     count, gpu_type);
}

// TensorOpt's cluster: two DGX-1-like machines of 8 V100s, one 100 Gb/s EDR NIC each.
json tensoropt_v100_2x8() {
  return assemble(
      "tensoropt-v100-2x8",
      "2 nodes x 8 V100, DGX-1 NVLink hybrid cube mesh, 100 Gb/s EDR RDMA between (TensorOpt)",
      {"v100-sxm2-16gb"}, {"nvlink2", "pcie3", "qpi", "ib-edr"},
      dgx1_v100_nodes("v100-sxm2-16gb", 2), ib_network("ib-edr"));
}

// NVIDIA DGX-1 with V100 16 GB and 32 GB: one node of the hybrid cube mesh (the systems of
// NVIDIA's DeepLearningExamples tables).
json dgx1_v100() {
  return assemble("dgx1-v100", "DGX-1: 8 x V100 SXM2 16 GB, NVLink2 hybrid cube mesh",
                  {"v100-sxm2-16gb"}, {"nvlink2", "pcie3", "qpi"},
                  dgx1_v100_nodes("v100-sxm2-16gb", 1), "");
}

json dgx1_v100_32gb() {
  return assemble("dgx1-v100-32gb", "DGX-1: 8 x V100 SXM2 32 GB, NVLink2 hybrid cube mesh",
                  {"v100-sxm2-32gb"}, {"nvlink2", "pcie3", "qpi"},
                  dgx1_v100_nodes("v100-sxm2-32gb", 1), "");
}

}  // namespace

json h100_cluster_json(int num_nodes) {
  PLANNER_CHECK(num_nodes >= 1, "h100_cluster_json({})", num_nodes);
  return assemble(fmt::format("h100x{}", 8 * num_nodes), h100_cluster_description(8 * num_nodes),
                  {"h100-sxm"}, {"nvlink4-switch", "pcie5", "ib-ndr"}, dgx_h100_nodes(num_nodes),
                  ib_network("ib-ndr"));
}

std::string h100_cluster_description(int num_gpus) {
  return fmt::format("{} x H100 SXM5 80 GB, 8 to a DGX H100 node, 400 Gb/s InfiniBand NDR between",
                     num_gpus);
}

const std::vector<Preset>& all() {
  static const std::vector<Preset> kPresets = {
      {"dgx-h100", dgx_h100},
      {"h100-cluster-4x8", h100_cluster_4x8},
      {"dgx-a100", dgx_a100},
      {"pcie-4gpu", pcie_4gpu},
      {"p2.8xlarge", p2_8xlarge},
      {"flexflow-p100-4x4", flexflow_p100_4x4},
      {"flexflow-k80-16x4", flexflow_k80_16x4},
      {"tensoropt-v100-2x8", tensoropt_v100_2x8},
      {"dgx1-v100", dgx1_v100},
      {"dgx1-v100-32gb", dgx1_v100_32gb},
  };
  return kPresets;
}

}  // namespace planner::importers::presets
