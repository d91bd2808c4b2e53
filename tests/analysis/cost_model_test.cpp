// Tests for analysis/cost_model.cpp: roofline and measured kernel times.
#include "analysis/cost_model.h"

#include <cmath>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace planner::analysis {
namespace {

ir::Op op_of(const std::string& type) {
  ir::Op op;
  op.name = "n";
  op.op_type = type;
  return op;
}

TEST_CASE("a large MatMul on an H100 runs at its FLOPs over peak, within the efficiency") {
  auto topo = importers::topology_preset("dgx-h100");
  REQUIRE(topo);
  const importers::DeviceType& h100 = topo->device_type(0);
  ComputeCostModel model;
  double m = 8192, n = 8192, k = 8192;
  double flops = 2 * m * n * k;
  double bytes = 4 * (m * k + k * n + m * n);
  double t = model.roofline(h100, op_of("MatMul"), ir::DType::kFloat32, flops, bytes);
  double ideal = flops / h100.flops(ir::DType::kFloat32);
  double eff = model.options().efficiency[static_cast<size_t>(OpClass::kMatmul)].compute;
  CHECK(t == doctest::Approx(ideal / eff + model.options().launch_overhead));
  CHECK(t >= ideal);
  // TF32 makes it faster; bf16 faster again.
  ComputeCostOptions tf32;
  tf32.allow_tf32 = true;
  CHECK(ComputeCostModel(tf32).roofline(h100, op_of("MatMul"), ir::DType::kFloat32, flops, bytes) < t);
}

TEST_CASE("element-wise ops are memory bound and shape ops are free") {
  auto topo = importers::topology_preset("dgx-h100");
  REQUIRE(topo);
  const importers::DeviceType& h100 = topo->device_type(0);
  ComputeCostModel model;
  double bytes = 2.0 * 4 * 64e6;
  double t = model.roofline(h100, op_of("Relu"), ir::DType::kFloat32, 64e6, bytes);
  CHECK(t == doctest::Approx(bytes / (h100.memory_bandwidth * 0.8) + 4e-6));
  CHECK(model.roofline(h100, op_of("Reshape"), ir::DType::kFloat32, 0, bytes) == 0);
}

TEST_CASE("measured costs: exact, interpolated, scaled, absent") {
  auto costs = MeasuredCosts::parse(R"({"schema": "planner-costs/1", "device": "H100",
    "kernels": [
      {"op_type": "Relu", "input_shapes": [[100]], "seconds": 1e-5},
      {"op_type": "Relu", "input_shapes": [[300]], "seconds": 3e-5}
    ]})", "costs.json");
  REQUIRE(costs);
  ir::Op relu = op_of("Relu");
  CHECK(*costs->lookup(relu, {{100}}, 100) == doctest::Approx(1e-5));
  CHECK(*costs->lookup(relu, {{200}}, 200) == doctest::Approx(2e-5));
  CHECK(*costs->lookup(relu, {{600}}, 600) == doctest::Approx(6e-5));
  CHECK_FALSE(costs->lookup(op_of("Tanh"), {{100}}, 100));

  auto topo = importers::topology_preset("dgx-h100");
  REQUIRE(topo);
  ComputeCostModel model({}, &*costs);
  CHECK(model.op_time(topo->device_type(0), relu, ir::DType::kFloat32, {{200}}, 200, 1600) ==
        doctest::Approx(2e-5));
}

TEST_CASE("bad costs files name the JSON path") {
  auto c = MeasuredCosts::parse(R"({"schema": "planner-costs/1", "kernels": [{"op_type": "Relu",
    "input_shapes": [[4]], "seconds": -1}]})", "c.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().message() == "c.json: $.kernels[0].seconds: expected a positive number");
  c = MeasuredCosts::parse("{", "c.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().message().rfind("c.json:1:2: invalid JSON: ", 0) == 0);
  c = MeasuredCosts::parse(R"({"kernels": []})", "c.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().message() == "c.json: $.schema: expected \"planner-costs/1\"");
}

TEST_CASE(
    "costs files: numbers out of range, wrong types and sizes that overflow are user errors") {
  // 1e400 reached users as "error: internal: [json.exception.out_of_range.406]".
  auto c = MeasuredCosts::parse(R"({"schema": "planner-costs/1", "kernels": [{"op_type": "Relu",
    "input_shapes": [[4]], "seconds": 1e400}]})",
                                "c.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().message() == "c.json:2:39: invalid JSON: number 1e400 is out of range");
  // A non-string domain, attributes or dtype was an internal error (nlohmann's type_error).
  for (const char* key : {"domain", "attributes", "dtype", "device"}) {
    CAPTURE(key);
    const std::string text =
        std::string(key) == "device"
            ? R"({"schema": "planner-costs/1", "device": 7, "kernels": []})"
            : fmt::format(
                  R"({{"schema": "planner-costs/1", "kernels": [{{"op_type": "Relu", "{}": 7,
    "input_shapes": [[4]], "seconds": 1}}]}})",
                  key);
    c = MeasuredCosts::parse(text, "c.json");
    REQUIRE_FALSE(c);
    CHECK(c.error().message() ==
          (std::string(key) == "device"
               ? std::string("c.json: $.device: expected a string")
               : fmt::format("c.json: $.kernels[0].{}: expected a string", key)));
  }
  // Sizes whose element count overflows to infinity, and times a zero size to NaN: a NaN work
  // made lookup dereference a null pointer.
  std::string huge = "[";
  for (int i = 0; i < 20; ++i) huge += "9223372036854775807, ";
  huge += "0]";
  c = MeasuredCosts::parse(R"({"schema": "planner-costs/1", "kernels": [{"op_type": "Relu",
    "input_shapes": [)" + huge +
                               R"(], "seconds": 1}]})",
                           "c.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().message() ==
        "c.json: $.kernels[0].input_shapes: sizes too large: the element count is not a finite "
        "number");
}

TEST_CASE("lookup with a work that compares with nothing (NaN) gives a measurement, not a crash") {
  auto costs = MeasuredCosts::parse(R"({"schema": "planner-costs/1", "kernels": [
    {"op_type": "Relu", "input_shapes": [[100]], "seconds": 1e-5},
    {"op_type": "Relu", "input_shapes": [[400]], "seconds": 4e-5}]})",
                                    "c.json");
  REQUIRE(costs);
  auto t = costs->lookup(op_of("Relu"), {{7}}, std::nan(""));
  REQUIRE(t);
  CHECK(*t == doctest::Approx(1e-5));
}

TEST_CASE("calibration files go through the bounded JSON reader") {
  auto c = parse_calibration(R"({"schema": "planner-calibration/1", "tile_m": 1e400})", "cal.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().message() == "cal.json:1:47: invalid JSON: number 1e400 is out of range");
  c = parse_calibration("{\"about\": " + std::string(200, '[') + std::string(200, ']') + "}", "cal.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().message() == "cal.json:1:138: invalid JSON: nested deeper than 128 levels");
  c = parse_calibration(R"({"schema": "planner-calibration/1", "tile_m": 64})", "cal.json");
  REQUIRE(c);
  CHECK(c->tile_m == 64);
}

}  // namespace
}  // namespace planner::analysis
