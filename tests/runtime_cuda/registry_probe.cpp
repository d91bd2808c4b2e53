// Runs without a GPU: every operator of the kernel table has a cuda implementation (its own
// kernel, cuBLAS, cuDNN or the host fallback) and, since this program links the cuda backend,
// every cuda kernel the table names compiled and linked. Prints the table. Also checks that
// WorldOptions reads its flags and that a World without a GPU fails with one clear line.
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <string>

#include "planner_rt/collectives.h"
#include "planner_rt/kernels.h"
#include "planner_rt/tensor.h"

namespace rt = planner::rt;

int main() {
  int failures = 0;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::printf("FAIL: %s\n", what.c_str());
      ++failures;
    }
  };
  expect(rt::backend_name() == "cuda", "backend_name() is cuda");
  std::map<std::string, int> counts;
  for (const std::string& name : rt::kernel_names()) {
    const size_t dot = name.find('.', 3);  // "ai.onnx.Relu", "ai.planner.SGD"
    const std::string domain = name.substr(0, dot), op = name.substr(dot + 1);
    const std::string impl(rt::kernel_implementation(domain, op));
    expect(impl == "cuda" || impl == "cublas" || impl == "cudnn" || impl == "host",
           name + " has implementation '" + impl + "'");
    expect(rt::has_kernel(domain, op), name + " is registered");
    ++counts[impl];
    std::printf("%-32s %s\n", name.c_str(), impl.c_str());
  }
  for (const auto& [impl, n] : counts) std::printf("%s: %d operators\n", impl.c_str(), n);
  // cuBLAS: MatMul, Gemm, MatMulGradWeight, MatMulTransB and the 7 recurrent operators.
  expect(counts["cuda"] > 40 && counts["cublas"] == 11 && counts["cudnn"] >= 5,
         "native implementations cover the compute operators");
  expect(counts["host"] == 0, "no operator runs on the host as a whole");

  const char* argv[] = {"launcher", "--ranks-per-gpu", "8", "--collective-timeout-ms=500",
                        "--mpi",    "plan.json"};
  rt::WorldOptions o = rt::WorldOptions::from_args(8, 6, argv);
  expect(o.size == 8 && o.ranks_per_gpu == 8 && o.mpi && o.timeout.count() == 500,
         "WorldOptions::from_args reads --ranks-per-gpu, --collective-timeout-ms, --mpi");
  try {
    const char* bad[] = {"launcher", "--ranks-per-gpu", "x"};
    rt::WorldOptions::from_args(2, 3, bad);
    expect(false, "--ranks-per-gpu x is refused");
  } catch (const rt::Error& e) {
    std::printf("refused as expected: %s\n", e.what());
  }

  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  if (gpus == 0) {
    try {
      rt::World world(rt::WorldOptions{});
      expect(false, "a World without a GPU fails");
    } catch (const rt::Error& e) {
      std::printf("no GPU, as expected: %s\n", e.what());
      expect(std::string(e.what()).find("no GPU") != std::string::npos, "message names the GPU");
    }
  } else {
    rt::World world(rt::WorldOptions{});
    std::printf("%s\n", world.description().c_str());
  }
  std::printf("%s\n", failures ? "registry_probe: FAILED" : "registry_probe: ok");
  return failures ? 1 : 0;
}
