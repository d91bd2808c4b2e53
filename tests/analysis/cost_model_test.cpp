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
  op.name = type + "_0";
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
  double t = model.roofline(h100, op_of("MatMul"), ir::DType::kFloat32, flops, bytes,
                            GemmShape{1, m, n, k});
  double ideal = flops / h100.flops(ir::DType::kFloat32);
  double eff = model.options().efficiency[static_cast<size_t>(OpClass::kMatmul)].compute;
  // Large enough that tiles, waves and depth cost almost nothing.
  double shape = model.shape_efficiency({1, m, n, k}, h100.sm_count);
  CHECK(shape > 0.95);
  CHECK(t == doctest::Approx(ideal / (eff * shape) + model.options().launch_overhead));
  CHECK(t >= ideal);
  // TF32 makes it faster; bf16 faster again.
  ComputeCostOptions tf32;
  tf32.allow_tf32 = true;
  CHECK(ComputeCostModel(tf32).roofline(h100, op_of("MatMul"), ir::DType::kFloat32, flops, bytes) <
        t);
}

TEST_CASE("element-wise ops are memory bound and shape ops are free") {
  auto topo = importers::topology_preset("dgx-h100");
  REQUIRE(topo);
  const importers::DeviceType& h100 = topo->device_type(0);
  ComputeCostModel model;
  double bytes = 2.0 * 4 * 64e6;
  double t = model.roofline(h100, op_of("Relu"), ir::DType::kFloat32, 64e6, bytes);
  const ComputeCostOptions& o = model.options();
  double eff = o.efficiency[static_cast<size_t>(OpClass::kElementwise)].memory * bytes /
               (bytes + o.memory_half_bytes);
  CHECK(t == doctest::Approx(bytes / (h100.memory_bandwidth * eff) + o.launch_overhead));
  // A small kernel reaches a smaller fraction of the bandwidth.
  double small = 4.0 * 64e3;
  double ts =
      model.roofline(h100, op_of("Relu"), ir::DType::kFloat32, 32e3, small) - o.launch_overhead;
  CHECK(small / ts < 0.5 * bytes / (t - o.launch_overhead));
  CHECK(model.roofline(h100, op_of("Reshape"), ir::DType::kFloat32, 0, bytes) == 0);
}

TEST_CASE("dense kernels lose efficiency to tiles, waves and shallow reductions") {
  ComputeCostModel model;
  const int sms = 108;
  // One full wave of 128 x 128 tiles against one tile more: the second wave is nearly empty.
  double full = model.shape_efficiency({1, 128 * 12, 128 * 9, 4096}, sms);
  double spill = model.shape_efficiency({1, 128 * 12 + 1, 128 * 9, 4096}, sms);
  CHECK(spill < 0.6 * full);
  // A padded tile: 130 rows use two tiles of 128.
  CHECK(model.shape_efficiency({108, 130, 128, 4096}, sms) <
        model.shape_efficiency({108, 128, 128, 4096}, sms));
  // Depth: K = depth_half halves it.
  double deep = model.shape_efficiency({108, 128, 128, 1 << 20}, sms);
  double half = model.shape_efficiency({108, 128, 128, model.options().depth_half}, sms);
  CHECK(half == doctest::Approx(0.5 * deep).epsilon(0.01));
  // A weight gradient (five output tiles, huge K) splits K across the machine: without the
  // split five of 108 multiprocessors would work.
  CHECK(model.shape_efficiency({1, 64, 576, 800000}, sms) > 0.4);
  CHECK(model.shape_efficiency({1, 64, 576, 512}, sms) < 0.05);
}

TEST_CASE("gemm_shape: matmuls and convolutions as the GEMMs they run") {
  auto g = gemm_shape(op_of("MatMul"), {{8, 128, 768}, {768, 3072}}, 2.0 * 8 * 128 * 768 * 3072);
  REQUIRE(g);
  CHECK(g->batch == 8);
  CHECK(g->m == 128);
  CHECK(g->n == 3072);
  CHECK(g->k == 768);
  ir::Op gemm = op_of("Gemm");
  gemm.attributes["transB"] = ir::Attribute{int64_t{1}};
  g = gemm_shape(gemm, {{32, 2048}, {1000, 2048}}, 2.0 * 32 * 2048 * 1000);
  REQUIRE(g);
  CHECK(g->m == 32);
  CHECK(g->n == 1000);
  CHECK(g->k == 2048);
  // A 3x3 convolution, 64 -> 128 channels on 32 x 56 x 56 outputs: M = 32*56*56, N = 128, K = 576.
  double flops = 2.0 * 32 * 56 * 56 * 128 * 64 * 9;
  g = gemm_shape(op_of("Conv"), {{32, 64, 56, 56}, {128, 64, 3, 3}}, flops);
  REQUIRE(g);
  CHECK(g->m == doctest::Approx(32 * 56 * 56));
  CHECK(g->n == 128);
  CHECK(g->k == 576);
  // Its filter gradient ConvGradFilter(X, dY): M = 128, N = 576, K = 32*56*56.
  g = gemm_shape(op_of("ConvGradFilter"), {{32, 64, 56, 56}, {32, 128, 56, 56}}, flops);
  REQUIRE(g);
  CHECK(g->m == 128);
  CHECK(g->n == doctest::Approx(576));
  CHECK(g->k == doctest::Approx(32 * 56 * 56));
  // Grouped: 32 groups of 4 channels are 32 small GEMMs.
  ir::Op grouped = op_of("Conv");
  grouped.attributes["group"] = ir::Attribute{int64_t{32}};
  g = gemm_shape(grouped, {{8, 128, 28, 28}, {128, 4, 3, 3}}, 2.0 * 8 * 28 * 28 * 128 * 4 * 9);
  REQUIRE(g);
  CHECK(g->batch == 32);
  CHECK(g->n == 4);
  CHECK(g->k == 36);
  CHECK_FALSE(gemm_shape(op_of("Relu"), {{4}}, 4));
}

TEST_CASE("calibration files override the kernel model and name bad fields") {
  auto o = parse_calibration(R"({"schema": "planner-calibration/1",
    "efficiency": {"conv": {"tf32": 0.2}}, "depth_half": 10, "tile_n": 64})",
                             "cal.json");
  REQUIRE(o);
  CHECK(o->efficiency[static_cast<size_t>(OpClass::kConv)].tf32 == 0.2);
  CHECK(o->efficiency[static_cast<size_t>(OpClass::kConv)].compute ==
        ComputeCostOptions{}.efficiency[static_cast<size_t>(OpClass::kConv)].compute);
  CHECK(o->depth_half == 10);
  CHECK(o->tile_n == 64);
  auto bad = parse_calibration(R"({"schema": "planner-calibration/1", "efficiency": {"cnv": {}}})",
                               "cal.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() == "cal.json: $.efficiency.cnv: unknown operator class");
  bad = parse_calibration(
      R"({"schema": "planner-calibration/1", "efficiency": {"conv": {"tf32": 1.5}}})", "cal.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() ==
        "cal.json: $.efficiency.conv.tf32: expected a number in [0.001, 1]");
  bad = parse_calibration(R"({"schema": "planner-calibration/1", "launch_overhead": 1e400})",
                          "cal.json");
  REQUIRE_FALSE(bad);
}

TEST_CASE("measured costs: exact, interpolated, scaled, absent") {
  auto costs = MeasuredCosts::parse(R"({"schema": "planner-costs/1", "device": "H100",
    "kernels": [
      {"op_type": "Relu", "input_shapes": [[100]], "seconds": 1e-5},
      {"op_type": "Relu", "input_shapes": [[300]], "seconds": 3e-5}
    ]})",
                                    "costs.json");
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

TEST_CASE("a synchronous step waits for the slowest of its GPUs") {
  // Slowdowns uniform in [0, s]: the slowest of n is s n / (n + 1) on average, one GPU's s / 2.
  ComputeCostOptions o;
  CHECK(o.speed_spread == 0.2);
  CHECK(sync_slowdown(o, 1) == 1.0);
  CHECK(sync_slowdown(o, 2) == doctest::Approx((1 + 0.2 * 2 / 3) / 1.1));
  CHECK(sync_slowdown(o, 8) == doctest::Approx(1.0707).epsilon(1e-4));
  CHECK(sync_slowdown(o, 128) == doctest::Approx(1.0894).epsilon(1e-4));
  // Bounded: never past (1 + s) / (1 + s / 2), and growing with n.
  double last = 1.0;
  for (int n : {2, 4, 8, 16, 64, 256, 1024, 16384, 1 << 24}) {
    CHECK(sync_slowdown(o, n) > last);
    CHECK(sync_slowdown(o, n) < 1.2 / 1.1);
    last = sync_slowdown(o, n);
  }
  o.speed_spread = 0;
  CHECK(sync_slowdown(o, 1000) == 1.0);

  // A calibration file sets the spread.
  auto c =
      parse_calibration(R"({"schema": "planner-calibration/1", "speed_spread": 0.1})", "c.json");
  REQUIRE(c);
  CHECK(c->speed_spread == 0.1);
  CHECK_FALSE(
      parse_calibration(R"({"schema": "planner-calibration/1", "speed_spread": 2})", "c.json"));
}

TEST_CASE("bad costs files name the JSON path") {
  auto c = MeasuredCosts::parse(R"({"schema": "planner-costs/1", "kernels": [{"op_type": "Relu",
    "input_shapes": [[4]], "seconds": -1}]})",
                                "c.json");
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
  c = parse_calibration("{\"about\": " + std::string(200, '[') + std::string(200, ']') + "}",
                        "cal.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().message() == "cal.json:1:138: invalid JSON: nested deeper than 128 levels");
  c = parse_calibration(R"({"schema": "planner-calibration/1", "tile_m": 64})", "cal.json");
  REQUIRE(c);
  CHECK(c->tile_m == 64);
}

}  // namespace
}  // namespace planner::analysis
