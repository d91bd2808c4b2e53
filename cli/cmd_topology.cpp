// `planner topology list | show | check`: the built-in device topologies and the JSON format.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/topology_flags.h"
#include "importers/topology.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

using importers::DeviceId;
using importers::Topology;

// Link and memory rates are quoted in decimal units, as vendors do.
std::string format_rate(double bytes_per_second) {
  if (bytes_per_second >= 1e12) return fmt::format("{:.4g} TB/s", bytes_per_second / 1e12);
  if (bytes_per_second >= 1e9) return fmt::format("{:.4g} GB/s", bytes_per_second / 1e9);
  return fmt::format("{:.4g} MB/s", bytes_per_second / 1e6);
}

std::string format_tflops(double flops) {
  return fmt::format("{:.4g}", flops / 1e12);
}

// "8", or "2-4" when the groups differ in size.
std::string group_sizes(const importers::TopologyLevel& level) {
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto& g : level.groups) lo = std::min(lo, g.size()), hi = std::max(hi, g.size());
  return lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
}

// The pair of GPUs behind a level's figures: separated by the level, joined by the level above,
// with the lowest route bandwidth and then the highest latency; the lowest ranks on ties.
std::pair<DeviceId, DeviceId> worst_pair(const Topology& topo, size_t l) {
  std::vector<int> group_of(topo.num_devices()), parent_of(topo.num_devices(), 0);
  const auto& levels = topo.levels();
  for (size_t g = 0; g < levels[l].groups.size(); ++g)
    for (DeviceId d : levels[l].groups[g]) group_of[d] = static_cast<int>(g);
  if (l > 0)
    for (size_t g = 0; g < levels[l - 1].groups.size(); ++g)
      for (DeviceId d : levels[l - 1].groups[g]) parent_of[d] = static_cast<int>(g);
  std::pair<DeviceId, DeviceId> worst{0, 0};
  double worst_bandwidth = 0, worst_latency = 0;
  for (DeviceId a = 0; a < topo.num_devices(); ++a)
    for (DeviceId b = a + 1; b < topo.num_devices(); ++b) {
      if (parent_of[a] != parent_of[b] || group_of[a] == group_of[b]) continue;
      double bw = topo.bandwidth(a, b), lat = topo.latency(a, b);
      if (worst == std::pair<DeviceId, DeviceId>{0, 0} || bw < worst_bandwidth ||
          (bw == worst_bandwidth && lat > worst_latency))
        worst = {a, b}, worst_bandwidth = bw, worst_latency = lat;
    }
  return worst;
}

std::string route_text(const Topology& topo, DeviceId a, DeviceId b) {
  importers::Route r = topo.route(a, b);
  std::string text = topo.endpoints()[a].name;
  importers::EndpointId at = a;
  for (importers::LinkId l : r.links) {
    at = topo.links()[l].other(at);
    text += " -> " + topo.endpoints()[at].name;
  }
  return text;
}

void print_summary(const Topology& topo) {
  const nlohmann::ordered_json& compact = topo.compact_json();
  std::printf("topology   %s%s%s\n", topo.name().c_str(), topo.description().empty() ? "" : ": ",
              topo.description().c_str());
  std::printf("gpus       %d in %d node%s\n", topo.num_devices(), topo.num_nodes(),
              topo.num_nodes() == 1 ? "" : "s");

  std::map<int, int> per_type;
  for (const auto& d : topo.devices()) ++per_type[d.type];
  for (const auto& [t, n] : per_type) {
    const importers::DeviceType& type = topo.device_types()[t];
    std::string flops;
    for (const auto& [ct, v] : type.peak_flops)
      flops += fmt::format("{}{} {}", flops.empty() ? "" : ", ", ct, format_tflops(v));
    std::printf("device     %d x %s: %s, %s at %s; TFLOP/s %s\n", n, type.name.c_str(),
                type.model.c_str(), format_bytes(static_cast<double>(type.memory_bytes)).c_str(),
                format_rate(type.memory_bandwidth).c_str(), flops.c_str());
  }

  // Node groups, as the JSON form declares them.
  int first_node = 0;
  for (const auto& group : compact["nodes"]) {
    int count = group["count"].get<int>();
    const auto& gpus = group["gpus"];
    int64_t used = gpus.value("use", gpus["count"].get<int64_t>());
    std::string span = count == 1
                           ? fmt::format("node{}", first_node)
                           : fmt::format("node{}-node{}", first_node, first_node + count - 1);
    std::string parts = fmt::format("{} x {}", used, gpus["type"].get<std::string>());
    if (used != gpus["count"].get<int64_t>())
      parts += fmt::format(" (of {})", gpus["count"].get<int64_t>());
    for (const char* key : {"switches", "cpus", "nics"})
      if (group.contains(key)) {
        std::vector<std::string> names = group[key].get<std::vector<std::string>>();
        parts += fmt::format("; {} {}", key, fmt::join(names, " "));
      }
    std::string label = group.contains("name") ? " (" + group["name"].get<std::string>() + ")" : "";
    std::printf("nodes      %s%s: %s\n", span.c_str(), label.c_str(), parts.c_str());
    first_node += count;
  }
  if (compact.contains("network") && compact["network"].contains("switches")) {
    auto names = compact["network"]["switches"].get<std::vector<std::string>>();
    std::printf("network    switches %s\n", fmt::format("{}", fmt::join(names, " ")).c_str());
  }

  // Links by type and bandwidth, in order of first appearance.
  std::vector<std::pair<std::string, double>> kinds;
  std::vector<int> counts;
  std::vector<double> latencies;
  for (const auto& link : topo.links()) {
    std::pair<std::string, double> key{link.type.empty() ? "inline" : link.type, link.bandwidth};
    auto it = std::find(kinds.begin(), kinds.end(), key);
    if (it == kinds.end()) {
      kinds.push_back(key), counts.push_back(0), latencies.push_back(link.latency);
      it = kinds.end() - 1;
    }
    ++counts[it - kinds.begin()];
  }
  std::printf("links      %zu\n", topo.links().size());
  for (size_t i = 0; i < kinds.size(); ++i)
    std::printf("  %5d x %-16s %12s %10s\n", counts[i], kinds[i].first.c_str(),
                format_rate(kinds[i].second).c_str(), format_seconds(latencies[i]).c_str());

  if (topo.levels().empty()) return;
  std::printf("levels     slowest first; the slowest route between two groups with one parent\n");
  for (size_t l = 0; l < topo.levels().size(); ++l) {
    const auto& level = topo.levels()[l];
    std::string groups = fmt::format("{} groups of {}", level.groups.size(), group_sizes(level));
    std::printf("  %zu  %-20s %12s %10s\n", l, groups.c_str(), format_rate(level.bandwidth).c_str(),
                format_seconds(level.latency).c_str());
  }
  std::printf("routes     the slowest route of each level\n");
  for (size_t l = 0; l < topo.levels().size(); ++l) {
    auto [a, b] = worst_pair(topo, l);
    std::printf("  %zu  %s\n", l, route_text(topo, a, b).c_str());
  }
}

int run_list(Format format) {
  std::vector<importers::PresetInfo> presets = importers::topology_presets();
  if (format == Format::kJson) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& p : presets)
      j.push_back({{"name", p.name},
                   {"gpus", p.num_devices},
                   {"nodes", p.num_nodes},
                   {"description", p.description}});
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("%-20s %5s %5s  %s\n", "name", "gpus", "nodes", "description");
  for (const auto& p : presets)
    std::printf("%-20s %5d %5d  %s\n", p.name.c_str(), p.num_devices, p.num_nodes,
                p.description.c_str());
  return 0;
}

int run_show(const TopologyFlags& flags, Format format) {
  auto topo = flags.resolve();
  if (!topo) return report(topo.error());
  if (format == Format::kJson) {
    std::printf("%s\n", importers::topology_to_json(*topo)
                            .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
    return 0;
  }
  print_summary(*topo);
  return 0;
}

int run_check(const std::string& path, Format format) {
  auto topo = importers::load_topology(path);
  if (!topo) return report(topo.error());
  if (format == Format::kJson) {
    std::printf("%s\n", importers::topology_to_json(*topo)
                            .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
    return 0;
  }
  std::printf("%s: ok\n", path.c_str());
  print_summary(*topo);
  return 0;
}

struct TopologyCommand {
  Format list_format = Format::kTable;
  Format show_format = Format::kTable;
  Format check_format = Format::kTable;
  TopologyFlags show;
  std::string check_path;
};

}  // namespace

void configure_topology(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<TopologyCommand>();
  // At most one subcommand, and leftovers allowed here (not in the subcommands, which are made
  // first), so that a mistyped one reaches `run` and gets a suggestion instead of CLI11's
  // "A subcommand is required".
  app.require_subcommand(0, 1);
  CLI::App* list = app.add_subcommand("list", "list the built-in topologies");
  add_format_flag(*list, flags->list_format);

  CLI::App* show = app.add_subcommand(
      "show", "describe a built-in topology or a topology file (--format json: its JSON form)");
  show->add_option("topology", flags->show.topology, "a built-in topology name or a JSON file");
  // Not range-checked here: resolve_topology says what is wrong in one line.
  show->add_option("--gpus", flags->show.gpus,
                   "the first N GPUs of it; alone, N H100s 8 to a node");
  add_format_flag(*show, flags->show_format);

  CLI::App* check = app.add_subcommand("check", "validate a topology JSON file and summarise it");
  check->add_option("file", flags->check_path, "topology JSON file")->required();
  add_format_flag(*check, flags->check_format);

  app.allow_extras();

  run = [flags, &app, list, show, check] {
    if (list->parsed()) return run_list(flags->list_format);
    if (show->parsed()) return run_show(flags->show, flags->show_format);
    if (check->parsed()) return run_check(flags->check_path, flags->check_format);
    std::vector<std::string> extra = app.remaining();
    if (extra.empty()) {
      std::fprintf(stderr, "error: missing command: planner topology list|show|check\n");
      return 2;
    }
    const char* hint = nullptr;
    for (const char* name : {"list", "show", "check"})
      if (!hint && edit_distance(extra[0], name) <= 2) hint = name;
    if (hint)
      std::fprintf(stderr, "error: unknown command 'topology %s', did you mean 'topology %s'?\n",
                   extra[0].c_str(), hint);
    else
      std::fprintf(stderr, "error: unknown command 'topology %s' (commands: list, show, check)\n",
                   extra[0].c_str());
    return 2;
  };
}

}  // namespace planner::cli
