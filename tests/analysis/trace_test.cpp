// Tests for analysis/trace.cpp: the Chrome trace parses back, with one event per task.
#include "analysis/trace.h"

#include <map>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace planner::analysis {
namespace {

Task make_task(const std::string& name, ResourceId r, double seconds, GroupId group = kNoGroup,
               TaskKind kind = TaskKind::kCompute, int64_t bytes = 0, int32_t op = -1) {
  Task t;
  t.name = name;
  t.resource = r;
  t.duration = seconds;
  t.group = group;
  t.kind = kind;
  t.bytes = bytes;
  t.op = op;
  return t;
}

TEST_CASE("chrome trace: valid JSON, one complete event per task, durations in microseconds") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0", ResourceKind::kDevice, 0});
  ResourceId g1 = g.add_resource({"gpu1", ResourceKind::kDevice, 1});
  ResourceId link = g.add_resource({"gpu0->gpu1 \"ib\"", ResourceKind::kLink, -1});
  GroupId fc = g.add_group("fc1");
  TaskId a = g.add_task(make_task("fc1 fwd", g0, 0.002, fc, TaskKind::kCompute, 0, 7));
  TaskId c = g.add_task(make_task("send", link, 0.0005, fc, TaskKind::kComm, 4096, 7));
  TaskId b = g.add_task(make_task("fc2 fwd", g1, 0.001));
  TaskId d = g.add_task(make_task("zero", g0, 0.0));
  g.add_edge(a, c);
  g.add_edge(c, b);
  auto tl = simulate(g);
  REQUIRE(tl.has_value());
  std::string text = to_chrome_trace(g, *tl);
  CHECK(text == to_chrome_trace(g, *tl));  // deterministic

  nlohmann::json json = nlohmann::json::parse(text);  // throws (fails the test) if invalid
  REQUIRE(json.contains("traceEvents"));
  std::map<std::string, nlohmann::json> by_name;
  std::map<int, std::string> thread_names;
  int complete = 0, processes = 0;
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      by_name[e["name"].get<std::string>()] = e;
    } else if (e["ph"] == "M" && e["name"] == "thread_name") {
      thread_names[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    } else if (e["ph"] == "M" && e["name"] == "process_name") {
      ++processes;
    }
  }
  CHECK(complete == g.num_tasks());
  CHECK(processes == 3);  // node 0, node 1, unplaced
  CHECK(thread_names.size() == 3);
  CHECK(thread_names[link + 1] == "gpu0->gpu1 \"ib\"");
  for (TaskId t : {a, b, c, d}) {
    const nlohmann::json& e = by_name.at(g.task(t).name);
    CHECK(e["ts"].get<double>() == doctest::Approx(tl->start[t] * 1e6));
    CHECK(e["dur"].get<double>() == doctest::Approx((tl->end[t] - tl->start[t]) * 1e6));
    CHECK(e["tid"].get<int>() == g.task(t).resource + 1);
    CHECK(e["args"]["task"].get<int>() == t);
  }
  const nlohmann::json& send = by_name.at("send");
  CHECK(send["cat"] == "comm");
  CHECK(send["args"]["bytes"].get<int64_t>() == 4096);
  CHECK(send["args"]["op"].get<int>() == 7);
  CHECK(send["args"]["group"] == "fc1");
  CHECK(by_name.at("fc1 fwd")["cat"] == "compute");
  CHECK(by_name.at("fc1 fwd")["dur"].get<double>() == doctest::Approx(2000.0));
  // Tracks of different nodes live in different processes.
  CHECK(by_name.at("fc1 fwd")["pid"] != by_name.at("fc2 fwd")["pid"]);
  CHECK(by_name.at("fc1 fwd")["pid"] == by_name.at("zero")["pid"]);
}

TEST_CASE("chrome trace: an empty graph is a valid, empty trace") {
  TaskGraph g;
  auto tl = simulate(g);
  REQUIRE(tl.has_value());
  CHECK(tl->step_time == 0.0);
  nlohmann::json json = nlohmann::json::parse(to_chrome_trace(g, *tl));
  CHECK(json["traceEvents"].empty());
}

}  // namespace
}  // namespace planner::analysis
