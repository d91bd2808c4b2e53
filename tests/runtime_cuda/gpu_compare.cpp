// On a machine with a GPU: runs every cuda kernel (and samples of the host fallback) on random
// inputs and compares it with the cpu kernel (run_cpu_kernel), then checks the collectives with
// several ranks sharing GPU 0 and, with two or more GPUs, over NCCL. Exits 77 (skip) when
// cudaGetDeviceCount reports no GPU, 1 on any mismatch.
//   gpu_compare [--verbose]
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "planner_rt/collectives.h"
#include "planner_rt/counters.h"
#include "planner_rt/half.h"
#include "planner_rt/kernels.h"
#include "planner_rt/precision.h"
#include "planner_rt/profiler.h"
#include "planner_rt/tensor.h"

namespace rt = planner::rt;
using rt::Attributes;
using rt::DType;
using rt::Shape;

namespace {

bool verbose = false;
int failures = 0;
std::set<std::string> covered;

enum class Fill { kUniform, kPositive, kBool, kInts };

struct In {
  DType dtype = DType::kFloat32;
  Shape shape;
  Fill fill = Fill::kUniform;
  std::vector<int64_t> values;  // kInts: exact values (axes, shapes, indices)
  bool absent = false;
};
struct Out {
  DType dtype = DType::kFloat32;
  Shape shape;
  bool absent = false;
};

In F(Shape s) {
  return In{DType::kFloat32, std::move(s)};
}
In P(Shape s) {
  return In{DType::kFloat32, std::move(s), Fill::kPositive};
}
In B(Shape s) {
  return In{DType::kBool, std::move(s), Fill::kBool};
}
In I64(std::vector<int64_t> v) {
  return In{DType::kInt64, {static_cast<int64_t>(v.size())}, Fill::kInts, std::move(v)};
}
Out O(Shape s, DType d = DType::kFloat32) {
  return Out{d, std::move(s)};
}
std::vector<uint8_t> random_bytes(const In& in, std::mt19937& rng) {
  const int64_t n = rt::num_elements(in.shape);
  std::vector<uint8_t> b(static_cast<size_t>(n) * rt::dtype_size(in.dtype));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), pos(0.5f, 2.0f);
  for (int64_t i = 0; i < n; ++i) {
    switch (in.dtype) {
      case DType::kFloat32: {
        float v = in.fill == Fill::kPositive ? pos(rng) : u(rng);
        std::memcpy(b.data() + i * 4, &v, 4);
        break;
      }
      case DType::kBool:
        b[static_cast<size_t>(i)] = (rng() & 1) != 0;
        break;
      case DType::kInt64: {
        int64_t v = in.fill == Fill::kInts ? in.values[static_cast<size_t>(i)]
                                           : static_cast<int64_t>(rng() % 5);
        std::memcpy(b.data() + i * 8, &v, 8);
        break;
      }
      case DType::kInt32: {
        int32_t v = in.fill == Fill::kInts ? static_cast<int32_t>(in.values[static_cast<size_t>(i)])
                                           : static_cast<int32_t>(rng() % 5);
        std::memcpy(b.data() + i * 4, &v, 4);
        break;
      }
      case DType::kFloat16:
      case DType::kBFloat16: {
        const float f = in.fill == Fill::kPositive ? pos(rng) : u(rng);
        const uint16_t h = in.dtype == DType::kFloat16 ? rt::f32_to_f16(f) : rt::f32_to_bf16(f);
        std::memcpy(b.data() + i * 2, &h, 2);
        break;
      }
      default:
        break;
    }
  }
  return b;
}

// The f32 value of element e of a host f32 / f16 / bf16 array.
float float_at(DType d, const uint8_t* p, int64_t e) {
  if (d == DType::kFloat32) {
    float v;
    std::memcpy(&v, p + e * 4, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p + e * 2, 2);
  return d == DType::kFloat16 ? rt::f16_to_f32(h) : rt::bf16_to_f32(h);
}

// Runs one case on the cpu (reference) and the gpu and compares every output.
void check(const std::string& domain, const std::string& op, const Attributes& attrs,
           const std::vector<In>& ins, const std::vector<Out>& outs, double atol = 1e-4,
           double rtol = 1e-3) {
  covered.insert((domain.empty() ? "ai.onnx" : domain) + "." + op);
  static std::mt19937 rng(1234);
  static rt::Allocator alloc;
  std::string label = domain + "." + op + " " + rt::attribute_text(attrs);
  for (const In& i : ins) label += " " + rt::shape_to_string(i.shape);
  try {
    std::vector<std::vector<uint8_t>> host_in, host_out;
    std::vector<rt::TensorBuffer> dev_in, dev_out;
    std::vector<rt::Tensor> cpu_in, cpu_out, gpu_in, gpu_out;
    for (const In& i : ins) {
      if (i.absent) {
        cpu_in.emplace_back();
        gpu_in.emplace_back();
        dev_in.emplace_back();
        host_in.emplace_back();
        continue;
      }
      host_in.push_back(random_bytes(i, rng));
      cpu_in.emplace_back(i.dtype, i.shape, host_in.back().data());
      dev_in.emplace_back(alloc, i.dtype, i.shape);
      rt::copy_from_host(dev_in.back().view(), host_in.back().data());
      gpu_in.push_back(dev_in.back().view());
    }
    for (const Out& o : outs) {
      if (o.absent) {
        cpu_out.emplace_back();
        gpu_out.emplace_back();
        dev_out.emplace_back();
        host_out.emplace_back();
        continue;
      }
      host_out.emplace_back(static_cast<size_t>(rt::num_elements(o.shape)) *
                            rt::dtype_size(o.dtype));
      cpu_out.emplace_back(o.dtype, o.shape, host_out.back().data());
      dev_out.emplace_back(alloc, o.dtype, o.shape);
      gpu_out.push_back(dev_out.back().view());
    }
    rt::run_cpu_kernel(domain, op, attrs, cpu_in, cpu_out, "reference");
    // The host rules `planner compile` counts by (planner_rt/cuda_host_calls.h): a call they
    // send to the host must reach it (the dispatch applies them); the device kernels may send
    // more for what only shows at run time.
    const std::string_view rule = rt::cuda_host_reason(domain, op, attrs, gpu_in, gpu_out);
    const int64_t before = rt::host_counters().host_fallback_kernels;
    rt::run_kernel(domain, op, attrs, gpu_in, gpu_out, "gpu");
    const bool on_host = rt::host_counters().host_fallback_kernels > before;
    if (!rule.empty() && !on_host) {
      std::printf("FAIL %s: the host rules say '%.*s', the call ran on the device\n", label.c_str(),
                  static_cast<int>(rule.size()), rule.data());
      ++failures;
    }
    if (verbose && on_host)
      std::printf("host %s: %s\n", label.c_str(),
                  rule.empty() ? "found at run time" : std::string(rule).c_str());
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].absent) continue;
      std::vector<uint8_t> got(host_out[k].size());
      rt::copy_to_host(gpu_out[k], got.data());
      const int64_t n = rt::num_elements(outs[k].shape);
      double worst = 0;
      int64_t bad = -1;
      for (int64_t e = 0; e < n && bad < 0; ++e) {
        if (outs[k].dtype == DType::kFloat32 || outs[k].dtype == DType::kFloat16 ||
            outs[k].dtype == DType::kBFloat16) {
          const float a = float_at(outs[k].dtype, host_out[k].data(), e);
          const float b = float_at(outs[k].dtype, got.data(), e);
          const double err = std::fabs(static_cast<double>(a) - b);
          worst = std::max(worst, err);
          if (!(err <= atol + rtol * std::fabs(a)) && !(std::isnan(a) && std::isnan(b))) bad = e;
          if (bad >= 0)
            std::printf("FAIL %s: output %zu element %lld: cpu %.9g, gpu %.9g\n", label.c_str(), k,
                        static_cast<long long>(e), a, b);
        } else {
          const size_t es = rt::dtype_size(outs[k].dtype);
          if (std::memcmp(host_out[k].data() + e * es, got.data() + e * es, es) != 0) {
            bad = e;
            std::printf("FAIL %s: output %zu element %lld differs\n", label.c_str(), k,
                        static_cast<long long>(e));
          }
        }
      }
      if (bad >= 0) ++failures;
      if (verbose)
        std::printf("ok   %s [%s] output %zu max error %.3g\n", label.c_str(),
                    std::string(rt::kernel_implementation(domain, op)).c_str(), k, worst);
    }
  } catch (const rt::Error& e) {
    std::printf("FAIL %s: %s\n", label.c_str(), e.what());
    ++failures;
  }
}

void kernel_cases() {
  const char* unary[] = {"Relu", "Sigmoid", "Tanh",      "Erf",         "Exp",
                         "Abs",  "Neg",     "Gelu",      "Softplus",    "LeakyRelu",
                         "Elu",  "Selu",    "Softsign",  "HardSigmoid", "Sin",
                         "Cos",  "Mish",    "HardSwish", "Ceil",        "Floor"};
  for (const char* op : unary) check("", op, {}, {F({3, 5, 7})}, {O({3, 5, 7})});
  for (const char* op : {"Sqrt", "Log", "Reciprocal"})
    check("", op, {}, {P({4, 33})}, {O({4, 33})});
  check("", "Gelu", {{"approximate", std::string("tanh")}}, {F({64})}, {O({64})});
  check("", "Clip", {}, {F({5, 6}), F({}), F({})}, {O({5, 6})});
  check("", "Clip", {{"min", -0.5}, {"max", 0.25}}, {F({5, 6})}, {O({5, 6})});
  check("", "Not", {}, {B({4, 4})}, {O({4, 4}, DType::kBool)});
  check("", "Identity", {}, {F({3, 3})}, {O({3, 3})});
  check("", "Reshape", {}, {F({2, 3, 4}), I64({6, -1})}, {O({6, 4})});
  check("", "Flatten", {{"axis", int64_t{1}}}, {F({2, 3, 4})}, {O({2, 12})});
  check("", "Squeeze", {}, {F({2, 1, 4}), I64({1})}, {O({2, 4})});
  check("", "Unsqueeze", {}, {F({2, 4}), I64({0})}, {O({1, 2, 4})});
  check("", "Dropout", {}, {F({3, 4})}, {O({3, 4}), O({3, 4}, DType::kBool)});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    check("", op, {}, {F({2, 3, 4}), F({3, 1})}, {O({2, 3, 4})});
    check("", op == std::string("Max") || op == std::string("Min") ? "Sum" : op, {},
          {F({4, 1, 5}), F({1, 6, 1})}, {O({4, 6, 5})});
  }
  check("", "Pow", {}, {P({3, 4}), F({4})}, {O({3, 4})});
  check("", "Pow", {}, {F({3, 4}), In{DType::kInt64, {1}, Fill::kInts, {2}}}, {O({3, 4})});
  check("", "Add", {}, {In{DType::kInt64, {2, 3}}, In{DType::kInt64, {3}}},
        {O({2, 3}, DType::kInt64)});  // host fallback
  for (const char* op : {"Sum", "Max", "Min", "Mean"})
    check("", op, {}, {F({3, 1}), F({3, 4}), F({4})}, {O({3, 4})});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    check("", op, {}, {F({3, 4}), F({4})}, {O({3, 4}, DType::kBool)});
  for (const char* op : {"And", "Or", "Xor"})
    check("", op, {}, {B({3, 4}), B({3, 1})}, {O({3, 4}, DType::kBool)});
  check("", "Where", {}, {B({3, 1}), F({3, 4}), F({4})}, {O({3, 4})});
  check("", "MatMul", {}, {F({7, 9}), F({9, 5})}, {O({7, 5})});
  check("", "MatMul", {}, {F({2, 3, 7, 9}), F({9, 5})}, {O({2, 3, 7, 5})});
  check("", "MatMul", {}, {F({2, 3, 7, 9}), F({2, 3, 9, 5})}, {O({2, 3, 7, 5})});
  check("", "MatMul", {}, {F({7, 9}), F({4, 9, 5})}, {O({4, 7, 5})});
  check("", "MatMul", {}, {F({2, 1, 7, 9}), F({1, 3, 9, 5})}, {O({2, 3, 7, 5})});
  check("", "MatMul", {}, {F({9}), F({9, 5})}, {O({5})});
  check("", "MatMul", {}, {F({4, 9}), F({9})}, {O({4})});
  check("", "Gemm", {}, {F({6, 8}), F({8, 5}), F({5})}, {O({6, 5})});
  check("", "Gemm", {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}},
        {F({8, 6}), F({5, 8}), F({6, 1})}, {O({6, 5})});
  const Attributes conv = {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"strides", std::vector<int64_t>{2, 1}}};
  check("", "Conv", conv, {F({2, 4, 9, 8}), F({6, 4, 3, 3}), F({6})}, {O({2, 6, 5, 8})});
  check("", "Conv", {{"group", int64_t{2}}, {"dilations", std::vector<int64_t>{2, 2}}},
        {F({1, 4, 9, 9}), F({4, 2, 3, 3})}, {O({1, 4, 5, 5})});
  check("", "Conv", {}, {F({2, 3, 10}), F({4, 3, 3})}, {O({2, 4, 8})});  // 1-D
  check("", "Conv",
        {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}}},
        {F({1, 2, 6, 6}), F({3, 2, 2, 2})}, {O({1, 3, 3, 3})});  // asymmetric: fallback
  check("ai.planner", "ConvGradData", conv, {F({2, 6, 5, 8}), F({6, 4, 3, 3})}, {O({2, 4, 9, 8})});
  check("ai.planner", "ConvGradFilter", conv, {F({2, 4, 9, 8}), F({2, 6, 5, 8})},
        {O({6, 4, 3, 3})});
  const Attributes pool = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"strides", std::vector<int64_t>{2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  check("", "MaxPool", pool, {F({2, 3, 9, 9})}, {O({2, 3, 5, 5})});
  check("", "AveragePool", pool, {F({2, 3, 9, 9})}, {O({2, 3, 5, 5})});
  Attributes pool_inc = pool;
  pool_inc["count_include_pad"] = int64_t{1};
  check("", "AveragePool", pool_inc, {F({2, 3, 9, 9})}, {O({2, 3, 5, 5})});
  Attributes pool_ceil = pool;
  pool_ceil["ceil_mode"] = int64_t{1};
  check("", "MaxPool", pool_ceil, {F({1, 2, 8, 8})}, {O({1, 2, 4, 4})});  // fallback
  check("", "GlobalAveragePool", {}, {F({2, 3, 5, 7})}, {O({2, 3, 1, 1})});
  check("", "GlobalMaxPool", {}, {F({2, 3, 5, 7})}, {O({2, 3, 1, 1})});
  check("", "BatchNormalization", {}, {F({2, 3, 4, 5}), F({3}), F({3}), F({3}), P({3})},
        {O({2, 3, 4, 5})});
  check("", "LayerNormalization", {{"axis", int64_t{-1}}}, {F({4, 3, 300}), F({300}), F({300})},
        {O({4, 3, 300}), O({4, 3, 1}), O({4, 3, 1})});
  check("", "LayerNormalization", {{"axis", int64_t{1}}}, {F({4, 3, 5}), F({3, 5})},
        {O({4, 3, 5})});
  check("", "Softmax", {}, {F({6, 1000})}, {O({6, 1000})});
  check("", "Softmax", {{"axis", int64_t{1}}}, {F({3, 7, 5})}, {O({3, 7, 5})});
  check("", "LogSoftmax", {{"axis", int64_t{0}}}, {F({7, 5})}, {O({7, 5})});
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    check("", op, {{"axes", std::vector<int64_t>{1}}}, {F({3, 4, 5})}, {O({3, 1, 5})});
    check("", op, {{"keepdims", int64_t{0}}}, {F({3, 4, 5})}, {O({})});
  }
  check("", "ReduceSum", {{"keepdims", int64_t{0}}}, {F({3, 4, 5}), I64({0, 2})}, {O({4})});
  check("", "Transpose", {{"perm", std::vector<int64_t>{2, 0, 1}}}, {F({3, 4, 5})}, {O({5, 3, 4})});
  check("", "Transpose", {}, {In{DType::kInt64, {3, 4}}}, {O({4, 3}, DType::kInt64)});
  check("", "Shape", {}, {F({3, 4, 5})}, {O({3}, DType::kInt64)});
  // data movement (copy plans, Gather) and a host fallback sample (Cast to a saturated int)
  check("", "Cast", {{"to", int64_t{7}}}, {F({3, 4})}, {O({3, 4}, DType::kInt64)});
  check("", "Cast", {{"to", int64_t{1}}}, {I64({4, -3, 0, 9})}, {O({4})});
  check("", "Cast", {{"to", int64_t{10}}}, {F({3, 4})}, {O({3, 4}, DType::kFloat16)});
  check("", "Concat", {{"axis", int64_t{1}}}, {F({2, 3}), F({2, 4})}, {O({2, 7})});
  check("", "Concat", {{"axis", int64_t{0}}},
        {In{DType::kInt64, {2, 3}}, In{DType::kInt64, {1, 3}}}, {O({3, 3}, DType::kInt64)});
  check("", "Split", {{"axis", int64_t{1}}}, {F({2, 7}), I64({3, 4})}, {O({2, 3}), O({2, 4})});
  check("", "Gather", {{"axis", int64_t{0}}}, {F({5, 3}), I64({4, 0, 2})}, {O({3, 3})});
  check("", "Gather", {{"axis", int64_t{1}}}, {F({2, 5, 3}), I64({-1, 0, 2, 2})}, {O({2, 4, 3})});
  check("", "Slice", {}, {F({6, 4}), I64({1}), I64({5}), I64({0})}, {O({4, 4})});
  check("", "Slice", {}, {F({6, 4, 5}), I64({5, 4}), I64({0, 0}), I64({0, 2}), I64({-2, -3})},
        {O({3, 4, 2})});
  check("", "Pad", {}, {F({2, 3, 4}), I64({0, 1, -1, 1, 0, 2}), F({})}, {O({3, 4, 5})});
  check("", "Expand", {}, {F({3, 1}), I64({2, 3, 4})}, {O({2, 3, 4})});
  check("", "Tile", {}, {F({2, 3}), I64({3, 2})}, {O({6, 6})});
  check("ai.planner", "SliceGrad", {}, {F({4, 4}), I64({1}), I64({5}), I64({0})}, {O({6, 4})});
  check("ai.planner", "PadGrad", {}, {F({3, 4, 5}), I64({0, 1, -1, 1, 0, 2})}, {O({2, 3, 4})});
  check("ai.planner", "GatherGrad", {{"axis", int64_t{0}}}, {F({4, 3}), I64({1, 4, 1, 0})},
        {O({5, 3})});
  // selection and losses (indices and targets drawn in [0, 5))
  check("", "TopK", {{"axis", int64_t{1}}}, {F({3, 7}), I64({3})},
        {O({3, 3}), O({3, 3}, DType::kInt64)});
  check("ai.planner", "TopKGrad", {{"axis", int64_t{-1}}}, {F({3, 2}), In{DType::kInt64, {3, 2}}},
        {O({3, 5})});
  check("", "CumSum", {{"reverse", int64_t{1}}}, {F({4, 6}), I64({1})}, {O({4, 6})});
  // Resize by sizes (empty roi and scales): the three modes.
  check("", "Resize", {{"mode", std::string("linear")}},
        {F({2, 3, 4, 5}), F({0}), F({0}), I64({2, 3, 7, 9})}, {O({2, 3, 7, 9})});
  check("", "Resize",
        {{"mode", std::string("cubic")},
         {"coordinate_transformation_mode", std::string("align_corners")}},
        {F({2, 3, 4, 5}), F({0}), F({0}), I64({2, 3, 3, 8})}, {O({2, 3, 3, 8})});
  check("", "Resize", {{"nearest_mode", std::string("ceil")}},
        {F({2, 6}), F({0}), F({0}), I64({2, 15})}, {O({2, 15})});
  check("ai.planner", "ResizeGrad", {{"mode", std::string("cubic")}},
        {F({2, 3, 7, 9}), F({0}), F({0}), I64({2, 3, 7, 9})}, {O({2, 3, 4, 5})});
  check("", "OneHot", {}, {In{DType::kInt64, {3, 4}}, I64({6}), F({2})}, {O({3, 4, 6})});
  check("", "GatherElements", {{"axis", int64_t{1}}}, {F({3, 6}), In{DType::kInt64, {3, 4}}},
        {O({3, 4})});
  check("ai.planner", "GatherElementsGrad", {{"axis", int64_t{1}}},
        {F({3, 4}), In{DType::kInt64, {3, 4}}, F({3, 6})}, {O({3, 6})});
  check("", "NegativeLogLikelihoodLoss", {{"reduction", std::string("none")}},
        {F({4, 6, 3}), In{DType::kInt64, {4, 3}}, P({6})}, {O({4, 3})});
  check("", "NegativeLogLikelihoodLoss", {{"ignore_index", int64_t{2}}},
        {F({4, 6, 3}), In{DType::kInt64, {4, 3}}}, {O({})});
  check("ai.planner", "NLLLossGrad", {{"reduction", std::string("mean")}},
        {F({}), In{DType::kInt64, {4, 3}}, P({6})}, {O({4, 6, 3})});
  check("ai.planner", "NLLLossGrad", {{"reduction", std::string("none")}},
        {F({4, 3}), In{DType::kInt64, {4, 3}}}, {O({4, 6, 3})});
  // fused attention: a thread per row, heads wider than the device's 32-column chunk, random
  // Y and LSE for the gradient (any values: the cpu and the gpu take the same ones)
  check("ai.planner", "Attention", {{"scale", 0.5}},
        {F({2, 3, 5, 4}), F({2, 3, 7, 4}), F({2, 3, 7, 6})}, {O({2, 3, 5, 6}), O({2, 3, 5})});
  const Attributes causal = {{"scale", 0.2}, {"causal", int64_t{1}}, {"query_offset", int64_t{3}}};
  check("ai.planner", "Attention", causal, {F({2, 6, 40}), F({2, 9, 40}), F({2, 9, 37}), F({6, 9})},
        {O({2, 6, 37}), O({2, 6})});
  check("ai.planner", "AttentionGrad", causal,
        {F({2, 6, 37}), F({2, 6, 40}), F({2, 9, 40}), F({2, 9, 37}), F({2, 6, 37}), F({2, 6}),
         F({6, 9})},
        {O({2, 6, 40}), O({2, 9, 40}), O({2, 9, 37})});
  check("ai.planner", "AttentionGrad", {{"scale", 0.5}},
        {F({3, 5, 6}), F({3, 5, 4}), F({3, 7, 4}), F({3, 7, 6}), F({3, 5, 6}), F({3, 5})},
        {Out{DType::kFloat32, {}, true}, O({3, 7, 4}), O({3, 7, 6})});
  check("ai.planner", "PoolGrad",
        {{"op", std::string("MaxPool")},
         {"kernel_shape", std::vector<int64_t>{3, 3}},
         {"strides", std::vector<int64_t>{2, 2}},
         {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
        {F({2, 3, 4, 4}), F({2, 3, 8, 8})}, {O({2, 3, 8, 8})});
  check("ai.planner", "PoolGrad",
        {{"op", std::string("AveragePool")},
         {"kernel_shape", std::vector<int64_t>{3, 3}},
         {"strides", std::vector<int64_t>{2, 2}},
         {"pads", std::vector<int64_t>{1, 1, 1, 1}},
         {"count_include_pad", int64_t{1}}},
        {F({2, 3, 4, 4}), F({2, 3, 8, 8})}, {O({2, 3, 8, 8})});
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
    check("ai.planner", "GlobalPoolGrad", {{"op", std::string(op)}},
          {F({2, 3, 1, 1}), F({2, 3, 5, 5})}, {O({2, 3, 5, 5})});
  // ai.planner
  check("ai.planner", "LossGrad", {}, {F({3, 4})}, {O({3, 4})});
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Gelu", "Erf", "Softplus", "Mish", "HardSwish"})
    check("ai.planner", "UnaryGrad", {{"op", std::string(op)}}, {F({3, 4}), F({3, 4}), F({4})},
          {O({3, 4})});
  check("ai.planner", "UnaryGrad", {{"op", std::string("Sqrt")}}, {F({3, 4}), P({3, 4}), P({3, 4})},
        {O({3, 4})});
  check("ai.planner", "UnaryGrad", {{"op", std::string("Pow")}},
        {F({3, 4}), P({3, 4}), F({3, 4}), F({1})}, {O({3, 4})});
  check("ai.planner", "UnaryGrad", {{"op", std::string("Clip")}}, {F({3, 4}), F({3, 4}), F({3, 4})},
        {O({3, 4})});
  check("ai.planner", "DivGradB", {}, {F({3, 4}), F({3, 4}), P({4})}, {O({3, 4})});
  check("ai.planner", "WhereGrad", {{"branch", int64_t{2}}}, {B({3, 1}), F({3, 4})}, {O({3, 4})});
  check("ai.planner", "ReduceGrad",
        {{"op", std::string("ReduceMean")},
         {"axes", std::vector<int64_t>{1}},
         {"keepdims", int64_t{0}}},
        {F({3, 5}), F({3, 4, 5})}, {O({3, 4, 5})});
  check("ai.planner", "ReduceGrad",
        {{"op", std::string("ReduceSum")}, {"axes", std::vector<int64_t>{0, 2}}},
        {F({1, 4, 1}), F({3, 4, 5})}, {O({3, 4, 5})});
  check("ai.planner", "SoftmaxGrad", {{"op", std::string("Softmax")}}, {F({4, 9}), F({4, 9})},
        {O({4, 9})});
  check("ai.planner", "SoftmaxGrad", {{"op", std::string("LogSoftmax")}, {"axis", int64_t{0}}},
        {F({4, 9}), F({4, 9})}, {O({4, 9})});
  check("ai.planner", "LayerNormGrad", {}, {F({6, 40}), F({6, 40}), F({40})}, {O({6, 40})});
  check("ai.planner", "LayerNormParamGrad", {}, {F({6, 40}), F({6, 40})}, {O({40}), O({40})});
  check("ai.planner", "BatchNormGrad", {}, {F({2, 3, 4}), F({3}), P({3})}, {O({2, 3, 4})});
  check("ai.planner", "BatchNormParamGrad", {}, {F({2, 3, 4}), F({2, 3, 4}), F({3}), P({3})},
        {O({3}), O({3})});
  // training-mode batch norm and dropout (same hash as the cpu kernel: masks compare exactly)
  check("ai.planner", "BatchNormStats", {{"count", int64_t{40}}}, {F({2, 3, 4, 5})}, {O({2, 3})});
  check("ai.planner", "BatchNormTrain", {}, {F({2, 3, 4, 5}), F({3}), F({3}), P({2, 3})},
        {O({2, 3, 4, 5})});
  check("ai.planner", "BatchNormRunningStats", {{"momentum", 0.9}}, {P({2, 3}), F({3}), P({3})},
        {O({3}), O({3}), O({3}), O({3})});
  check("ai.planner", "BatchNormTrainParamGrad", {}, {F({2, 3, 4}), F({2, 3, 4}), P({2, 3})},
        {O({3}), O({3})});
  check("ai.planner", "BatchNormTrainGrad", {{"count", int64_t{8}}},
        {F({2, 3, 4}), F({2, 3, 4}), F({3}), P({2, 3}), F({3}), F({3})}, {O({2, 3, 4})});
  check("ai.planner", "DropoutTrain", {{"ratio", 0.3}, {"seed", int64_t{99}}}, {F({7, 300})},
        {O({7, 300}), O({7, 300}, DType::kBool)});
  check("ai.planner", "DropoutTrain",
        {{"ratio", 0.3},
         {"seed", int64_t{99}},
         {"shard_offset", std::vector<int64_t>{2, 100}},
         {"full_shape", std::vector<int64_t>{8, 400}}},
        {F({3, 200})}, {O({3, 200}), O({3, 200}, DType::kBool)});
  check("ai.planner", "DropoutGrad", {{"ratio", 0.3}}, {F({7, 300}), B({7, 300})}, {O({7, 300})});
  check("ai.planner", "MatMulGradWeight", {}, {F({3, 5, 16}), F({3, 5, 24})}, {O({16, 24})});
  check("ai.planner", "MatMulTransB", {}, {F({3, 5, 16}), F({24, 16})}, {O({3, 5, 24})});
  check("ai.planner", "ZerosLike", {}, {F({3, 4})}, {O({3, 4})});
  check("ai.planner", "SGD", {{"lr", 0.1}}, {F({100}), F({100})}, {O({100})});
  check("ai.planner", "Momentum", {}, {F({100}), F({100}), F({100})}, {O({100}), O({100})});
  check("ai.planner", "Adam", {{"step", int64_t{3}}}, {F({100}), F({100}), F({100}), P({100})},
        {O({100}), O({100}), O({100})});
}

// Runs body(comm, rank) on every rank of a world as threads; returns false on any error.
bool on_ranks(const rt::WorldOptions& opts,
              const std::function<void(rt::Communicator&, int, rt::Allocator&)>& body) {
  rt::World world(opts);
  std::printf("collectives: %s\n", world.description().c_str());
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(opts.size));
  for (int r : world.local_ranks())
    threads.emplace_back([&, r] {
      try {
        rt::Communicator comm(world, r);
        rt::Allocator alloc;
        body(comm, r, alloc);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  bool ok = true;
  for (size_t r = 0; r < errors.size(); ++r)
    if (!errors[r].empty()) {
      std::printf("FAIL rank %zu: %s\n", r, errors[r].c_str());
      ok = false;
    }
  return ok;
}

float val(int r, int64_t i) {
  return static_cast<float>(r * 100 + i) * 0.25f;
}

void expect_values(const std::string& what, const rt::Tensor& t,
                   const std::function<float(int64_t)>& want) {
  std::vector<float> got(static_cast<size_t>(t.numel()));
  rt::copy_to_host(t, got.data());
  for (int64_t i = 0; i < t.numel(); ++i)
    if (std::fabs(got[static_cast<size_t>(i)] - want(i)) > 1e-3f)
      throw rt::Error(what + ": element " + std::to_string(i) + " is " +
                      std::to_string(got[static_cast<size_t>(i)]) + ", expected " +
                      std::to_string(want(i)));
}

rt::TensorBuffer filled(rt::Allocator& a, const Shape& s, const std::function<float(int64_t)>& f) {
  rt::TensorBuffer b(a, DType::kFloat32, s);
  std::vector<float> v(static_cast<size_t>(rt::num_elements(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = f(static_cast<int64_t>(i));
  rt::copy_from_host(b.view(), v.data());
  return b;
}

void collective_cases(rt::WorldOptions opts) {
  const int n = opts.size;
  const bool ok = on_ranks(opts, [n](rt::Communicator& c, int r, rt::Allocator& a) {
    // all_reduce sum, in place
    auto x = filled(a, {2, 3}, [r](int64_t i) { return val(r, i); });
    c.all_reduce(x.view(), x.view(), rt::ReduceOp::kSum);
    expect_values("all_reduce", x.view(), [n](int64_t i) {
      float s = 0;
      for (int q = 0; q < n; ++q) s += val(q, i);
      return s;
    });
    // all_gather along axis 1, uneven pieces of extent q+1
    auto piece = filled(a, {2, r + 1}, [r](int64_t i) { return val(r, i); });
    const int64_t total = n * (n + 1) / 2;
    rt::TensorBuffer gathered(a, DType::kFloat32, {2, total});
    c.all_gather(piece.view(), gathered.view(), 1);
    expect_values("all_gather", gathered.view(), [total](int64_t i) {
      const int64_t row = i / total, col = i % total;
      int q = 0;
      int64_t start = 0;
      while (col >= start + q + 1) start += q + 1, ++q;
      return val(q, row * (q + 1) + (col - start));
    });
    // reduce_scatter along axis 1: input [2, 2n], each member keeps 2 columns
    auto full = filled(a, {2, 2 * n}, [r](int64_t i) { return val(r, i); });
    rt::TensorBuffer mine(a, DType::kFloat32, {2, 2});
    c.reduce_scatter(full.view(), mine.view(), 1, rt::ReduceOp::kSum);
    expect_values("reduce_scatter", mine.view(), [n, r](int64_t i) {
      const int64_t src = (i / 2) * 2 * n + 2 * r + i % 2;
      float s = 0;
      for (int q = 0; q < n; ++q) s += val(q, src);
      return s;
    });
    // all_to_all: split axis 0 ([n, 3]), concat axis 1 -> [1, 3n]
    auto rows = filled(a, {n, 3}, [r](int64_t i) { return val(r, i); });
    rt::TensorBuffer cols(a, DType::kFloat32, {1, 3 * n});
    c.all_to_all(rows.view(), cols.view(), 0, 1);
    expect_values("all_to_all", cols.view(),
                  [r](int64_t i) { return val(static_cast<int>(i / 3), r * 3 + i % 3); });
    // broadcast from the last rank
    auto b = filled(a, {5}, [r](int64_t i) { return val(r, i); });
    c.broadcast(b.view(), n - 1);
    expect_values("broadcast", b.view(), [n](int64_t i) { return val(n - 1, i); });
    // subgroup of the even ranks, concurrent with the odd ones
    std::vector<int> group;
    for (int q = r % 2; q < n; q += 2) group.push_back(q);
    auto g = filled(a, {4}, [r](int64_t i) { return val(r, i); });
    c.all_reduce(g.view(), g.view(), rt::ReduceOp::kMax, group);
    expect_values("subgroup all_reduce", g.view(),
                  [group](int64_t i) { return val(group.back(), i); });
    // send/recv in a ring
    auto s = filled(a, {3}, [r](int64_t i) { return val(r, i); });
    rt::TensorBuffer got(a, DType::kFloat32, {3});
    c.send(s.view(), (r + 1) % n, 7);
    c.recv(got.view(), (r + n - 1) % n, 7);
    expect_values("send/recv", got.view(), [n, r](int64_t i) { return val((r + n - 1) % n, i); });
    c.barrier();
  });
  if (!ok) ++failures;
}

// Mixed precision, TF32 and FP8: the cuda kernels (cuBLAS/cuDNN on 16-bit operands, the widening
// boundary elsewhere) against the cpu boundary's emulation. The two accumulate in different
// orders, so results may differ by a rounding of the 16-bit type: tolerances of a few ulps.
void precision_cases() {
  for (DType h : {DType::kFloat16, DType::kBFloat16}) {
    const double ulp = h == DType::kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    auto H = [h](Shape s) { return In{h, std::move(s)}; };
    auto OH = [h](Shape s) { return Out{h, std::move(s)}; };
    check("", "MatMul", {}, {H({7, 9}), F({9, 5})}, {OH({7, 5})}, 4 * ulp, 4 * ulp);
    check("", "MatMul", {}, {H({2, 7, 9}), H({2, 9, 5})}, {O({2, 7, 5})}, 4 * ulp, 4 * ulp);
    check("", "Gemm", {{"transB", int64_t{1}}}, {H({6, 8}), F({5, 8}), F({5})}, {OH({6, 5})},
          4 * ulp, 4 * ulp);
    check("", "Conv", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
          {H({2, 4, 9, 8}), F({6, 4, 3, 3}), F({6})}, {OH({2, 6, 9, 8})}, 8 * ulp, 8 * ulp);
    check("ai.planner", "ConvGradFilter", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
          {H({2, 4, 9, 8}), H({2, 6, 9, 8})}, {O({6, 4, 3, 3})}, 16 * ulp, 8 * ulp);
    check("", "Relu", {}, {H({3, 5, 7})}, {OH({3, 5, 7})}, 0, 0);
    check("", "Add", {}, {H({2, 3, 4}), F({4})}, {OH({2, 3, 4})}, 0, ulp);
    check("", "LayerNormalization", {{"axis", int64_t{-1}}}, {H({4, 3, 64}), F({64}), F({64})},
          {OH({4, 3, 64})}, 2 * ulp, 2 * ulp);
    check("", "Softmax", {{"axis", int64_t{-1}}}, {H({4, 33})}, {OH({4, 33})}, ulp, ulp);
  }
  rt::set_tf32(true);
  const double tf32 = std::ldexp(1.0, -10);
  check("", "MatMul", {}, {F({7, 9}), F({9, 5})}, {O({7, 5})}, 4 * tf32, 4 * tf32);
  check("", "Conv", {}, {F({2, 4, 9, 8}), F({6, 4, 3, 3}), F({6})}, {O({2, 6, 7, 6})}, 8 * tf32,
        8 * tf32);
  rt::set_tf32(false);
  // FP8 (set_fp8): both boundaries round the matrix operands (after any bf16 cast) to e4m3's
  // mantissa before the product, so the results differ by summation order only (f32 results,
  // tight tolerances that unrounded operands would miss by far) or one bf16 rounding.
  rt::set_fp8(true);
  const double bf16 = std::ldexp(1.0, -7);
  auto BF = [](Shape s) { return In{DType::kBFloat16, std::move(s)}; };
  check("", "MatMul", {}, {F({7, 9}), F({9, 5})}, {O({7, 5})}, 1e-5, 1e-5);
  check("", "MatMul", {}, {BF({2, 7, 9}), F({9, 5})}, {O({2, 7, 5})}, 1e-5, 1e-5);
  check("", "MatMul", {}, {BF({2, 7, 9}), BF({2, 9, 5})}, {O({2, 7, 5}, DType::kBFloat16)},
        4 * bf16, 4 * bf16);
  check("", "Gemm", {{"transB", int64_t{1}}}, {BF({6, 8}), F({5, 8}), F({5})}, {O({6, 5})}, 1e-5,
        1e-5);
  check("ai.planner", "MatMulTransB", {}, {BF({3, 5, 16}), F({24, 16})}, {O({3, 5, 24})}, 1e-5,
        1e-5);
  check("ai.planner", "MatMulGradWeight", {}, {BF({3, 5, 16}), BF({3, 5, 24})}, {O({16, 24})}, 1e-5,
        1e-5);
  rt::set_fp8(false);
}

// all_reduce of 16-bit buffers (sum in f32, rounded) on ranks of `options`.
void half_collective_cases(const rt::WorldOptions& options) {
  rt::World world(options);
  const int n = world.size();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int r : world.local_ranks())
    threads.emplace_back([&, r] {
      try {
        rt::Communicator c(world, r);
        rt::Allocator a;
        for (DType h : {DType::kFloat16, DType::kBFloat16}) {
          rt::TensorBuffer t(a, h, {64});
          std::vector<uint16_t> v(64);
          for (int i = 0; i < 64; ++i) {
            const float f = static_cast<float>(r + 1) * 0.25f + static_cast<float>(i) / 64.0f;
            v[static_cast<size_t>(i)] =
                h == DType::kFloat16 ? rt::f32_to_f16(f) : rt::f32_to_bf16(f);
          }
          rt::copy_from_host(t.view(), v.data());
          c.all_reduce(t.view(), t.view(), rt::ReduceOp::kSum);
          rt::copy_to_host(t.view(), v.data());
          const double ulp = h == DType::kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
          for (int i = 0; i < 64; ++i) {
            double want = 0;
            for (int q = 0; q < n; ++q) want += (q + 1) * 0.25 + i / 64.0;
            const float got = float_at(h, reinterpret_cast<const uint8_t*>(v.data()), i);
            if (std::fabs(got - want) > n * ulp * std::fabs(want)) ++bad;
          }
        }
      } catch (const std::exception& e) {
        std::printf("FAIL 16-bit all_reduce: %s\n", e.what());
        ++bad;
      }
    });
  for (auto& t : threads) t.join();
  if (bad) {
    std::printf("FAIL 16-bit all_reduce: %d element(s) off\n", bad.load());
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) verbose |= std::string(argv[i]) == "--verbose";
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::printf("gpu_compare: skipped (no GPU: cudaGetDeviceCount reports none)\n");
    return 77;
  }
  std::printf("gpu_compare on %s (%d GPU(s))\n", rt::device_name().c_str(), gpus);
  kernel_cases();
  precision_cases();
  for (const std::string& name : rt::kernel_names())
    if (!covered.count(name) &&
        rt::kernel_implementation(name.substr(0, name.find('.', 3)),
                                  name.substr(name.find('.', 3) + 1)) != "host")
      std::printf("note: %s (native) has no case here\n", name.c_str());
  rt::WorldOptions shared;
  shared.size = 8;
  shared.ranks_per_gpu = 8;
  shared.timeout = std::chrono::seconds(60);
  collective_cases(shared);
  half_collective_cases(shared);
  if (gpus >= 2) {
    rt::WorldOptions nccl;
    nccl.size = std::min(gpus, 4);
    nccl.ranks_per_gpu = 1;
    collective_cases(nccl);
    half_collective_cases(nccl);
  } else {
    std::printf("collectives over NCCL: skipped (needs 2 GPUs)\n");
  }
  std::printf("gpu_compare: %s (%d failure(s))\n", failures ? "FAILED" : "ok", failures);
  return failures ? 1 : 0;
}
