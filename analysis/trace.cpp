// Chrome trace-event JSON of a simulated timeline.
#include "analysis/trace.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

namespace planner::analysis {

namespace {

constexpr double kMicrosPerSecond = 1e6;

}  // namespace

std::string to_chrome_trace(const TaskGraph& graph, const Timeline& timeline) {
  PLANNER_CHECK(timeline.order.size() == static_cast<size_t>(graph.num_resources()),
                "timeline of {} resources for a graph of {}", timeline.order.size(),
                graph.num_resources());
  // Processes are nodes in ascending order; resources on no node come last, together.
  int32_t max_node = -1;
  for (ResourceId r = 0; r < graph.num_resources(); ++r)
    max_node = std::max(max_node, graph.resource(r).node);
  auto pid_of = [&](int32_t node) { return node >= 0 ? node + 1 : max_node + 2; };

  std::vector<std::string> lines;
  std::map<int32_t, bool> processes;  // node -> seen, ordered for deterministic metadata
  for (ResourceId r = 0; r < graph.num_resources(); ++r) processes[graph.resource(r).node] = true;
  for (const auto& [node, seen] : processes) {
    nlohmann::json name = {
        {"ph", "M"},
        {"name", "process_name"},
        {"pid", pid_of(node)},
        {"tid", 0},
        {"args", {{"name", node >= 0 ? fmt::format("node {}", node) : std::string("unplaced")}}}};
    nlohmann::json sort = {{"ph", "M"},
                           {"name", "process_sort_index"},
                           {"pid", pid_of(node)},
                           {"tid", 0},
                           {"args", {{"sort_index", pid_of(node)}}}};
    lines.push_back(name.dump());
    lines.push_back(sort.dump());
  }
  for (ResourceId r = 0; r < graph.num_resources(); ++r) {
    const Resource& res = graph.resource(r);
    nlohmann::json name = {{"ph", "M"},
                           {"name", "thread_name"},
                           {"pid", pid_of(res.node)},
                           {"tid", r + 1},
                           {"args", {{"name", res.name}}}};
    nlohmann::json sort = {{"ph", "M"},
                           {"name", "thread_sort_index"},
                           {"pid", pid_of(res.node)},
                           {"tid", r + 1},
                           {"args", {{"sort_index", r}}}};
    lines.push_back(name.dump());
    lines.push_back(sort.dump());
  }
  for (ResourceId r = 0; r < graph.num_resources(); ++r) {
    const Resource& res = graph.resource(r);
    for (TaskId t : timeline.order[static_cast<size_t>(r)]) {
      const Task& task = graph.task(t);
      double start = timeline.start[static_cast<size_t>(t)];
      double end = timeline.end[static_cast<size_t>(t)];
      nlohmann::json args = {{"task", t}};
      if (task.group != kNoGroup) args["group"] = graph.group_name(task.group);
      if (task.op >= 0) args["op"] = task.op;
      if (task.kind == TaskKind::kComm || task.bytes != 0) args["bytes"] = task.bytes;
      nlohmann::json event = {{"ph", "X"},
                              {"name", task.name},
                              {"cat", task.kind == TaskKind::kComm ? "comm" : "compute"},
                              {"pid", pid_of(res.node)},
                              {"tid", r + 1},
                              {"ts", start * kMicrosPerSecond},
                              {"dur", (end - start) * kMicrosPerSecond},
                              {"args", std::move(args)}};
      lines.push_back(event.dump());
    }
  }
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    out += i + 1 < lines.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  return out;
}

}  // namespace planner::analysis
