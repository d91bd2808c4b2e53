// verify's ReLU decisions in the runtime (planner_rt/relu_decisions.h): observing each ReLU's
// output per step, and imposing another run's decisions on a slice of the tensor.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "planner_rt/relu_decisions.h"
#include "rt_test_util.h"

using namespace rt_test;
namespace rt = planner::rt;

namespace {

// A program of one buffer: rank 0's slice [2, 4) of a 6-element tensor "h".
rt::Program one_slice() {
  rt::Program p;
  p.num_ranks = 1;
  rt::BufferSpec b;
  b.name = "h";
  b.shape = {2};
  b.global_shape = {6};
  b.offset = {2};
  p.buffers.push_back(b);
  return p;
}

void write_u64(std::ofstream& f, uint64_t v) {
  f.write(reinterpret_cast<const char*>(&v), 8);
}

// A dump holding the whole tensor `name` of f32 `values`.
void write_whole(const std::string& path, const std::string& name, std::vector<float> values) {
  std::ofstream f(path, std::ios::binary);
  f << "PLNRDUMP2\n";
  write_u64(f, name.size());
  f.write(name.data(), static_cast<std::streamsize>(name.size()));
  write_u64(f, 1);  // f32
  write_u64(f, 0);  // rank
  write_u64(f, 1);
  write_u64(f, values.size());
  write_u64(f, 0);
  write_u64(f, values.size());
  write_u64(f, values.size() * 4);
  f.write(reinterpret_cast<const char*>(values.data()),
          static_cast<std::streamsize>(values.size() * 4));
  double floor = 0;
  f.write(reinterpret_cast<const char*>(&floor), 8);
}

}  // namespace

TEST_CASE("ReLU outputs are observed per step, each occurrence named") {
  rt::Program p = one_slice();
  rt::StepSpec relu;
  relu.op_type = "Relu";
  relu.outputs = {0};
  rt::ReluDecisions d;
  d.observe = true;
  Buf y = F({2}, {0.5f, 0.0f});
  d.after_kernel(p, 1, relu, {y.t});
  d.after_kernel(p, 1, relu, {y.t});  // a second pass's ReLU of the same tensor
  d.after_kernel(p, 2, relu, {y.t});
  rt::StepSpec other = relu;
  other.op_type = "Sigmoid";
  d.after_kernel(p, 2, other, {y.t});  // not a ReLU: not observed
  REQUIRE(d.observed.size() == 3);
  CHECK(d.observed[0].name == "relu:h@1#0");
  CHECK(d.observed[1].name == "relu:h@1#1");
  CHECK(d.observed[2].name == "relu:h@2#0");
  float first;
  std::memcpy(&first, d.observed[0].bytes.data(), 4);
  CHECK(first == 0.5f);
}

TEST_CASE("another run's ReLU outputs are imposed on a slice") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "planner_relu_decisions_test.dump").string();
  // The other run kept elements 2 and 5 and dropped 3 and the rest.
  write_whole(path, "relu:h@1#0", {0, 0, 1e-7f, 0, 0, 3});
  rt::ReluDecisions d;
  d.load(path);
  std::remove(path.c_str());
  rt::Program p = one_slice();
  rt::StepSpec relu;
  relu.op_type = "Relu";
  relu.outputs = {0};
  // This rank's slice holds elements 2 and 3: dropped here (0), kept here (1e-7); it takes the
  // other run's values, so its decisions too.
  Buf y = F({2}, {0.0f, 1e-7f});
  d.after_kernel(p, 1, relu, {y.t});
  CHECK(y.f()[0] == 1e-7f);  // kept: the gradient passes
  CHECK(y.f()[1] == 0.0f);   // dropped
  CHECK(d.imposed_elements == 2);
  // Step 2 has no decisions in the file: nothing changes.
  Buf z = F({2}, {0.0f, 1e-7f});
  d.after_kernel(p, 2, relu, {z.t});
  CHECK(z.f()[1] == 1e-7f);
  CHECK_THROWS_AS(d.load("/nonexistent/relu.dump"), rt::Error);
}
