// The cuda backend's host rules (planner_rt/cuda_host_calls.h) on calls as the runtime
// describes them (runtime_stub/src/kernel_call.h): each rule sends what the device kernels
// cannot take to the host and leaves the rest on the device; every operator a rule names has a
// kernel. The same rules count host calls in `planner compile` (tests/cli/cases/
// compile_cuda_host_calls.t); the dispatch itself needs a GPU (launcher_report_test.sh).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../../runtime_stub/src/kernel_call.h"
#include "planner_rt/cuda_host_calls.h"
#include "planner_rt/kernels.h"

namespace {

using planner::rt::Attributes;
using planner::rt::AttrValue;
using planner::rt::DType;
using planner::rt::Shape;
using planner::rt::Tensor;

constexpr DType f32 = DType::kFloat32, i64 = DType::kInt64, i32 = DType::kInt32,
                f16 = DType::kFloat16, bf16 = DType::kBFloat16, boolean = DType::kBool;

struct T {
  DType dtype;
  Shape shape;
};

// The reason the rules give for a call of (domain, op) on tensors of these types and shapes.
std::string reason(std::string_view domain, std::string_view op, std::vector<T> in,
                   std::vector<T> out, Attributes attrs = {}) {
  std::vector<Tensor> ins, outs;
  for (const T& t : in) ins.push_back(Tensor(t.dtype, t.shape, nullptr));
  for (const T& t : out) outs.push_back(Tensor(t.dtype, t.shape, nullptr));
  planner::rt::kernels::KernelContext ctx{op, "n", attrs, ins, outs};
  return std::string(planner::rt::kernels::cuda_host_reason(ctx, domain));
}

std::string onnx(std::string_view op, std::vector<T> in, std::vector<T> out,
                 Attributes attrs = {}) {
  return reason("", op, std::move(in), std::move(out), std::move(attrs));
}

std::string planner_op(std::string_view op, std::vector<T> in, std::vector<T> out,
                       Attributes attrs = {}) {
  return reason("ai.planner", op, std::move(in), std::move(out), std::move(attrs));
}

const Shape v = {4, 8};

}  // namespace

TEST_CASE("element-wise kernels: integers to the host, f32 and 16-bit floats on the device") {
  CHECK(onnx("Relu", {{f32, v}}, {{f32, v}}).empty());
  CHECK(onnx("Relu", {{f16, v}}, {{f16, v}}).empty());
  CHECK(onnx("Neg", {{i64, v}}, {{i64, v}}) == "an integer input to an f32 kernel");
  CHECK(onnx("ReduceSum", {{i32, v}}, {{i32, {4, 1}}}) == "an integer input to an f32 kernel");
  CHECK(onnx("Add", {{f32, v}, {f32, {8}}}, {{f32, v}}).empty());
  CHECK(onnx("Add", {{bf16, v}, {f32, {8}}}, {{f32, v}}).empty());
  CHECK(onnx("Add", {{i64, v}, {i64, v}}, {{i64, v}}) == "an integer input to an f32 kernel");
  CHECK(onnx("Pow", {{f32, v}, {i64, {}}}, {{f32, v}}).empty());
  CHECK(onnx("Pow", {{i64, v}, {f32, {}}}, {{i64, v}}) == "an integer input to an f32 kernel");
  CHECK(onnx("Sum", {{f32, v}, {i32, v}}, {{f32, v}}) == "an integer input to an f32 kernel");
  CHECK(onnx("Equal", {{f32, v}, {f32, v}}, {{boolean, v}}).empty());
  CHECK(onnx("And", {{boolean, v}, {boolean, v}}, {{boolean, v}}).empty());
  CHECK(onnx("Equal", {{i64, v}, {i64, v}}, {{boolean, v}}) == "a comparison of integers");
}

TEST_CASE("strided kernels take at most 8 dimensions") {
  const Shape eight(8, 2), nine(9, 2);
  CHECK(onnx("Transpose", {{f32, eight}}, {{f32, eight}}).empty());
  CHECK(onnx("Transpose", {{f32, nine}}, {{f32, nine}}) == "more than 8 dimensions");
  CHECK(onnx("Add", {{f32, nine}, {f32, {2}}}, {{f32, nine}}) == "more than 8 dimensions");
  CHECK(planner_op("PadGrad", {{f32, nine}}, {{f32, nine}}) == "more than 8 dimensions");
  // A byte copy takes any rank.
  CHECK(onnx("Reshape", {{f32, nine}, {i64, {9}}}, {{f32, nine}}).empty());
}

TEST_CASE("casts the device lacks") {
  auto cast = [](DType from, DType to) {
    return onnx("Cast", {{from, v}}, {{to, v}}, {{"to", AttrValue{int64_t(to)}}});
  };
  CHECK(cast(i64, f32).empty());
  CHECK(cast(boolean, i32).empty());
  CHECK(cast(f32, f16).empty());
  CHECK(cast(bf16, f32).empty());
  CHECK(cast(f32, f32).empty());
  CHECK(cast(f32, i64) == "a cast the device lacks");
  CHECK(cast(i64, i32) == "a cast the device lacks");
}

TEST_CASE("pooling and convolution: what cuDNN takes") {
  const Shape x = {2, 3, 8, 8}, y = {2, 3, 4, 4};
  const Attributes pool = {{"kernel_shape", AttrValue{std::vector<int64_t>{2, 2}}},
                           {"strides", AttrValue{std::vector<int64_t>{2, 2}}}};
  CHECK(onnx("MaxPool", {{f32, x}}, {{f32, y}}, pool).empty());
  Attributes ceil = pool;
  ceil["ceil_mode"] = AttrValue{int64_t{1}};
  CHECK(onnx("MaxPool", {{f32, x}}, {{f32, y}}, ceil) == "ceil_mode");
  CHECK(onnx("MaxPool", {{f32, x}}, {{f32, y}, {i64, y}}, pool) == "MaxPool's indices");
  Attributes lopsided = pool;
  lopsided["pads"] = AttrValue{std::vector<int64_t>{0, 0, 1, 1}};
  CHECK(onnx("AveragePool", {{f32, x}}, {{f32, y}}, lopsided) ==
        "cuDNN takes padding the same at both ends");
  Attributes dilated = pool;
  dilated["dilations"] = AttrValue{std::vector<int64_t>{2, 2}};
  CHECK(onnx("MaxPool", {{f32, x}}, {{f32, y}}, dilated) == "dilated pooling");
  CHECK(onnx("MaxPool", {{f32, {2, 8}}}, {{f32, {2, 4}}}, pool) ==
        "cuDNN pools 1 to 3 spatial axes");
  CHECK(onnx("Conv", {{f32, x}, {f32, {3, 3, 3, 3}}}, {{f32, {2, 3, 6, 6}}}).empty());
  const Shape four_d = {1, 1, 2, 2, 2, 2};
  CHECK(onnx("Conv", {{f32, four_d}, {f32, four_d}}, {{f32, four_d}}) ==
        "cuDNN takes 1 to 3 spatial axes");
  CHECK(planner_op("ConvGradData", {{f32, four_d}, {f32, four_d}}, {{f32, four_d}}) ==
        "cuDNN takes 1 to 3 spatial axes");
  CHECK(planner_op("PoolGrad", {{f32, y}, {f32, x}}, {{f32, x}},
                   {{"kernel_shape", AttrValue{std::vector<int64_t>{33, 1}}},
                    {"op", AttrValue{std::string("MaxPool")}}}) ==
        "a pooling window wider than 32");
}

TEST_CASE("operators whose work is on the host") {
  CHECK(onnx("Shape", {{f32, v}}, {{i64, {2}}}) == "Shape reads the shape on the host");
  CHECK(planner_op("ReduceGrad", {{f32, {4, 1}}, {f32, v}, {f32, {4, 1}}}, {{f32, v}},
                   {{"op", AttrValue{std::string("ReduceMax")}}}) ==
        "Max/Min gradients split ties");
  CHECK(planner_op("ReduceGrad", {{f32, {4, 1}}, {f32, v}}, {{f32, v}},
                   {{"op", AttrValue{std::string("ReduceMean")}}})
            .empty());
  // The same op type in the other domain is not the rule's.
  CHECK(reason("ai.planner", "Shape", {{f32, v}}, {{i64, {2}}}).empty());
}

TEST_CASE("every operator a rule names has a kernel") {
  namespace d = planner::rt::cuda_host_detail;
  auto check = [](const auto& list, std::string_view domain) {
    for (std::string_view op : list) {
      CAPTURE(op);
      const bool onnx_kernel = planner::rt::has_kernel("", op);
      const bool planner_kernel = planner::rt::has_kernel("ai.planner", op);
      CHECK((domain.empty() ? onnx_kernel || planner_kernel : planner_kernel));
    }
  };
  check(d::kUnaryOps, "");
  check(d::kBinaryOps, "");
  check(d::kVariadicOps, "");
  check(d::kCompareOps, "");
  check(d::kStridedOps, "");
}
