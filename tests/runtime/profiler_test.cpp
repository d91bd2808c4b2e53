// Kernel timing, the canonical attribute text, and the --costs JSON round trip.
#include <nlohmann/json.hpp>
#include <sstream>

#include "planner_rt/profiler.h"
#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::Profiler;

TEST_CASE("attribute text is canonical and matches the planner's form") {
  Attributes a = {{"strides", Shape{1, 1}}, {"auto_pad", std::string("SAME")},
                  {"group", int64_t{3}},    {"epsilon", 1e-5},
                  {"alpha", 0.5},           {"acts", std::vector<std::string>{"Tanh", "Relu"}}};
  CHECK(planner::rt::attribute_text(a) ==
        "acts=[\"Tanh\",\"Relu\"];alpha=0.5;auto_pad=\"SAME\";epsilon=1e-05;group=3;strides=[1,1]");
  CHECK(planner::rt::format_double(1.0) == "1");
  CHECK(planner::rt::format_double(0.1) == "0.1");
  CHECK(planner::rt::attribute_text({}) == "");
}

TEST_CASE("profiled kernels make one costs entry per kind with the median time") {
  Profiler prof;
  Buf a = R({4, 8}, 1), b = R({8, 3}, 2), y = Z({4, 3});
  for (int i = 0; i < 3; ++i)
    prof.run("", "MatMul", {}, std::vector<Tensor>{a.t, b.t}, std::vector<Tensor>{y.t});
  Buf x = R({2, 3}, 3), r = Z({2, 3});
  prof.run("ai.onnx", "Relu", {}, std::vector<Tensor>{x.t}, std::vector<Tensor>{r.t});
  prof.record("ai.planner", "SGD", {{"lr", 0.01}}, std::vector<Tensor>{x.t, x.t}, 3.0);
  prof.record("ai.planner", "SGD", {{"lr", 0.01}}, std::vector<Tensor>{x.t, x.t}, 1.0);
  prof.record("ai.planner", "SGD", {{"lr", 0.01}}, std::vector<Tensor>{x.t, x.t}, 2.0);
  prof.record("ai.planner", "SGD", {{"lr", 0.01}}, std::vector<Tensor>{x.t, x.t}, 10.0);
  auto entries = prof.entries();
  REQUIRE(entries.size() == 3);
  std::ostringstream out;
  planner::rt::write_costs_json(out, "Test CPU \"x\"", prof);
  auto j = nlohmann::json::parse(out.str());
  CHECK(j["schema"] == "planner-costs/1");
  CHECK(j["device"] == "Test CPU \"x\"");
  REQUIRE(j["kernels"].size() == 3);
  bool saw_sgd = false, saw_matmul = false;
  for (const auto& k : j["kernels"]) {
    if (k["op_type"] == "SGD") {
      saw_sgd = true;
      CHECK(k["domain"] == "ai.planner");
      CHECK(k["attributes"] == "lr=0.01");
      CHECK(k["seconds"].get<double>() == 2.5);
      CHECK(k["input_shapes"] == nlohmann::json::parse("[[2,3],[2,3]]"));
    }
    if (k["op_type"] == "MatMul") {
      saw_matmul = true;
      CHECK(k["domain"] == "");
      CHECK(k["dtype"] == "f32");
      CHECK(k["input_shapes"] == nlohmann::json::parse("[[4,8],[8,3]]"));
      CHECK(k["seconds"].get<double>() > 0);
    }
  }
  CHECK(saw_sgd);
  CHECK(saw_matmul);
  Profiler other;
  other.merge(prof);
  CHECK(other.entries().size() == 3);
  CHECK(planner::rt::step_report(3, 1, 0.012345, 1572864) ==
        "rank 3 step 1: 12.345 ms, peak 1.50 MiB (1572864 bytes)");
  CHECK(!planner::rt::cpu_device_name().empty());
}
