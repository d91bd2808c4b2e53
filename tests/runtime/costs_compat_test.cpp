// The runtime's --costs file read back by the planner's own parser (analysis/cost_model.h):
// the attribute text the runtime writes must be the key the planner looks up.
#include <sstream>

#include "analysis/cost_model.h"
#include "planner_rt/profiler.h"
#include "rt_test_util.h"

using namespace rt_test;

TEST_CASE("the planner reads the runtime's costs file and finds each kernel by its attributes") {
  planner::rt::Profiler prof;
  Attributes ra = {{"group", int64_t{1}},
                   {"pads", Shape{1, 1, 1, 1}},
                   {"auto_pad", std::string("NOTSET")},
                   {"epsilon", 1e-5},
                   {"alpha", 0.1}};
  Buf x = R({1, 2, 5, 5}, 1), w = R({3, 2, 3, 3}, 2);
  prof.record("", "Conv", ra, std::vector<Tensor>{x.t, w.t}, 0.25);
  prof.record("", "Conv", ra, std::vector<Tensor>{x.t, w.t}, 0.75);
  prof.record("", "Conv", ra, std::vector<Tensor>{x.t, w.t}, 0.5);
  std::ostringstream out;
  planner::rt::write_costs_json(out, planner::rt::cpu_device_name(), prof);
  auto costs = planner::analysis::MeasuredCosts::parse(out.str(), "costs.json");
  REQUIRE(costs.has_value());
  CHECK(costs->size() == 1);
  planner::ir::Op op;
  op.op_type = "Conv";
  op.attributes["group"] = planner::ir::Attribute{int64_t{1}};
  op.attributes["pads"] = planner::ir::Attribute{std::vector<int64_t>{1, 1, 1, 1}};
  op.attributes["auto_pad"] = planner::ir::Attribute{std::string("NOTSET")};
  op.attributes["epsilon"] = planner::ir::Attribute{1e-5};
  op.attributes["alpha"] = planner::ir::Attribute{0.1};
  CHECK(planner::analysis::attribute_key(op) == planner::rt::attribute_text(ra));
  auto t = costs->lookup(op, {{1, 2, 5, 5}, {3, 2, 3, 3}}, 50 + 54);
  REQUIRE(t.has_value());
  CHECK(*t == doctest::Approx(0.5));
}
