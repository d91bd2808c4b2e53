// Fuzz target: --costs files through analysis::MeasuredCosts::parse, then lookups of the
// operator types the seeds measure, at sizes below, between and above any measurement.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/cost_model.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace an = planner::analysis;
  const std::string source = "fuzz-costs.json";
  std::string text(reinterpret_cast<const char*>(data), size);
  auto costs = an::MeasuredCosts::parse(text, source);
  if (!costs) {
    planner::fuzz::check_error(costs.error(), source);
    return 0;
  }
  const std::vector<std::vector<int64_t>> shapes = {{8, 256}, {256, 256}};
  for (const char* type : {"MatMul", "Gemm", "Relu", "Add", "Conv", "Softmax"}) {
    planner::ir::Op op;
    op.name = "op";
    op.op_type = type;
    for (double work : {0.0, 1.0, 1000.0, 67584.0, 1e9, 1e300}) {
      (void)costs->lookup(op, shapes, work);
    }
  }
  return 0;
}
