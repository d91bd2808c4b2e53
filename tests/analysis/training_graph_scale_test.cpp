// Tests for analysis/training_graph.cpp at scale: building the training step is near-linear in
// the operators, also when one tensor has 100k consumers (gradient parts summed, names made
// unique) and for a 100k-operator chain.
#include <time.h>

#include <string>

#include <doctest/doctest.h>

#include "analysis/training_graph.h"
#include "tests/analysis/graph_builder.h"

namespace planner::analysis {
namespace {

// CPU seconds this process has used: unlike wall time, not stretched by a loaded machine.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Builds the training graph of `g`, failing the test on an error; reports the CPU time taken.
TrainingGraph build_timed(const ir::Graph& g, double& seconds) {
  const double start = cpu_seconds();
  auto tg = build_training_graph(g, TrainingOptions{}, "scale.onnx");
  seconds = cpu_seconds() - start;
  REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
  return std::move(*tg);
}

// One weight read by `n` Add operators, each also reading its own input (x_i + w).
ir::Graph fan_out(int n) {
  testing::GraphBuilder b;
  b.param("w", {4});
  for (int i = 0; i < n; ++i) {
    std::string x = "x" + std::to_string(i);
    b.input(x, {4});
    b.op("add" + std::to_string(i), "Add", {x, "w"}, {{"y" + std::to_string(i), {4}}});
  }
  return b.build();
}

// A chain of `n` Relu operators after one MatMul with a weight.
ir::Graph chain(int n) {
  testing::GraphBuilder b;
  b.input("x", {2, 4}).param("w", {4, 4});
  b.op("mm", "MatMul", {"x", "w"}, {{"h0", {2, 4}}});
  for (int i = 0; i < n; ++i)
    b.op("relu" + std::to_string(i), "Relu", {"h" + std::to_string(i)},
         {{"h" + std::to_string(i + 1), {2, 4}}});
  return b.build();
}

int count_type(const TrainingGraph& tg, const std::string& type) {
  int n = 0;
  for (const ir::Op& op : tg.graph.ops()) n += op.op_type == type;
  return n;
}

TEST_CASE("a weight with 100k consumers: its gradient is summed in a chain, in seconds") {
  const int n = 100000;
  ir::Graph g = fan_out(n);
  double seconds = 0;
  TrainingGraph tg = build_timed(g, seconds);
  MESSAGE("training graph of " << n << " Adds sharing one weight: " << seconds << " s of CPU");
  CHECK(seconds < 20);  // it took more than 600 s; now about a second
  // Parts summed three first, then two more at a time onto the running sum.
  CHECK(count_type(tg, "Sum") == 1 + (n - 3 + 1) / 2);
  auto w = g.find_tensor("w");
  REQUIRE(w.has_value());
  ir::TensorId gw = tg.grad_of_tensor[static_cast<size_t>(*w)];
  REQUIRE(gw != ir::kNoTensor);
  CHECK(tg.graph.tensor(gw).name == "grad:w");
  // Every op and tensor name is unique, and names follow the forward op's.
  auto ok = tg.graph.finalize("scale.onnx");
  CHECK_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message()));
}

TEST_CASE("names made unique stay the same as probing one by one would give") {
  // Three consumers of w: parts summed by one Sum named after the weight's gradient.
  TrainingGraph tg = [] {
    double s = 0;
    return build_timed(fan_out(7), s);
  }();
  CHECK(count_type(tg, "Sum") == 3);
  // Sums share the base name of their group's op ("add0/grad", taken by its own backward):
  // each takes the smallest free suffix, as probing one by one from ".1" gives.
  std::vector<std::string> sums;
  for (const ir::Op& op : tg.graph.ops())
    if (op.op_type == "Sum") sums.push_back(op.name);
  CHECK(sums == std::vector<std::string>{"add0/grad.1", "add0/grad.2", "add0/grad.3"});
  CHECK(tg.graph.find_op("add0/grad").has_value());
}

TEST_CASE("a 100k-operator chain builds in seconds") {
  const int n = 100000;
  ir::Graph g = chain(n);
  double seconds = 0;
  TrainingGraph tg = build_timed(g, seconds);
  MESSAGE("training graph of a " << n << "-operator chain: " << seconds << " s of CPU");
  CHECK(seconds < 20);
  CHECK(count_type(tg, "Relu") == n);
  CHECK(tg.graph.num_ops() > 2 * n);
}

}  // namespace
}  // namespace planner::analysis
