// Tests for report/timeline_chart.cpp: lanes, colours by phase, merged boxes, the step time,
// the lane cap, a planned model's timeline, determinism.
#include "report/timeline_chart.h"

#include "support/text.h"
#include "support/units.h"
#include "tests/report/report_fixture.h"

namespace planner::report {
namespace {

using analysis::Phase;
using analysis::ResourceKind;
using analysis::Task;
using analysis::TaskKind;
using testing::count;

// gpu0 runs op 0 (forward, 1 ms), then 100 back-to-back 1 us tasks of op 1 (backward); its
// channel sends 1 MB after the first; "spare" never works.
struct Fixture {
  analysis::TaskGraph graph;
  analysis::Timeline timeline;
  Fixture() {
    auto gpu = graph.add_resource({"gpu0", ResourceKind::kDevice, 0});
    auto link = graph.add_resource({"gpu0:comm", ResourceKind::kLink, 0});
    graph.add_resource({"spare", ResourceKind::kDevice, 0});
    Task first{"fc1", gpu, TaskKind::kCompute, 1e-3, 0, 0};
    auto a = graph.add_task(first);
    auto prev = a;
    for (int i = 0; i < 100; ++i) {
      auto t =
          graph.add_task({fmt::format("fc1/grad [{}]", i), gpu, TaskKind::kCompute, 1e-6, 0, 1});
      graph.add_edge(prev, t);
      prev = t;
    }
    auto send =
        graph.add_task({"h1 -> fc2 (gpu0 to gpu1)", link, TaskKind::kComm, 5e-4, 1'000'000, 0});
    graph.add_edge(a, send);
    auto sim = analysis::simulate(graph);
    REQUIRE(sim.has_value());
    timeline = std::move(*sim);
  }
};

TEST_CASE("lanes for busy resources, boxes by phase, tiny neighbours merged, the step marked") {
  Fixture f;
  TimelineChartOptions options;
  options.title = "test";
  options.op_phase = {Phase::kForward, Phase::kBackward};
  const std::string svg = timeline_svg(f.graph, f.timeline, options);
  CHECK(count(svg, ">gpu0</text>") == 1);
  CHECK(count(svg, ">gpu0:comm</text>") == 1);
  CHECK(count(svg, ">spare</text>") == 0);
  CHECK(count(svg, "class=\"c0\"") == 2);  // forward: the box and the legend
  CHECK(count(svg, "class=\"c1\"") == 2);  // backward: 100 tasks, one box
  CHECK(count(svg, "class=\"c4\"") == 2);  // communication
  CHECK(count(svg, "class=\"c2\"") == 0);  // no update
  CHECK(count(svg, ">update</text>") == 0);
  CHECK(count(svg, "<title>100 tasks, ") == 1);
  CHECK(count(svg, "<title>fc1: 1.00 ms from 0 ns to 1.00 ms</title>") == 1);
  CHECK(count(svg, ">step " + format_seconds(f.timeline.step_time) + "</text>") == 1);
  CHECK(count(svg, ">0 ms</text>") == 1);  // the axis in milliseconds
  CHECK(count(svg, ">1 ms</text>") == 1);
  CHECK(timeline_svg(f.graph, f.timeline, options) == svg);
}

TEST_CASE("without phases compute is one colour; lanes past the cap are counted") {
  Fixture f;
  TimelineChartOptions options;
  options.max_lanes = 1;
  const std::string svg = timeline_svg(f.graph, f.timeline, options);
  CHECK(count(svg, "class=\"c3\"") == 2);  // one run (one colour, back to back) and the legend
  CHECK(count(svg, ">gpu0:comm</text>") == 0);
  CHECK(count(svg, "1 more busy resources not drawn") == 1);
}

TEST_CASE("resource and task names are escaped") {
  analysis::TaskGraph graph;
  auto r = graph.add_resource({"<gpu\n\"0\">", ResourceKind::kDevice, 0});
  graph.add_task({"a<b>&\x02", r, TaskKind::kCompute, 1e-3, 0, -1});
  auto sim = analysis::simulate(graph);
  REQUIRE(sim.has_value());
  TimelineChartOptions options;
  options.title = "t<&>";
  const std::string svg = timeline_svg(graph, *sim, options);
  CHECK(svg.find("&lt;gpu &quot;0&quot;&gt;") != std::string::npos);
  CHECK(svg.find("a&lt;b&gt;&amp;\xEF\xBF\xBD") != std::string::npos);
  CHECK(svg.find("t&lt;&amp;&gt;") != std::string::npos);
  CHECK(valid_utf8(svg) == svg);
}

TEST_CASE("the MLP's timeline on 4 GPUs: a lane per GPU and channel, every compute phase") {
  auto planned = testing::plan_mlp(4);
  TimelineChartOptions options;
  for (const auto& op : planned->plan.ops) options.op_phase.push_back(op.phase);
  const std::string svg = timeline_svg(planned->lowered.graph, planned->timeline, options);
  for (int d = 0; d < 4; ++d) CHECK(count(svg, fmt::format(">gpu{}</text>", d)) == 1);
  CHECK(count(svg, ">forward</text>") == 1);
  CHECK(count(svg, ">backward</text>") == 1);
  CHECK(count(svg, ">update</text>") == 1);
  CHECK(svg.size() < 200'000);
  CHECK(timeline_svg(planned->lowered.graph, planned->timeline, options) == svg);
}

}  // namespace
}  // namespace planner::report
