// Which kernel calls the cuda backend runs on the host, decided from what is known before the
// call runs: the operator, its tensors' types and shapes, its attributes. One rule set, read
// by both sides so that they cannot disagree:
//  - the cuda backend's dispatch (run_on_device) sends a call this names to the host fallback
//    (inputs copied back, the cpu kernel run, outputs copied over) before its device kernel
//    sees it;
//  - `planner compile --backend cuda` counts such calls per rank from the step program
//    (manifest.json host_fallback_kernels) without linking the runtime.
// A device kernel may still hand the host a call for what only shows at run time (cuDNN
// offers no algorithm, cuDNN's pooling output differs from ONNX's, Sum writing over one of
// its later inputs): those are counted by the launcher (--report), not predicted here.
// 16-bit floating tensors count as f32: the precision boundary widens them before a kernel
// sees them (precision_boundary.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_host_ops.h"

namespace planner::rt {

/// One tensor of a call: its ONNX type code (0: an absent optional input or output) and shape.
struct CallTensor {
  int32_t type = 0;
  std::vector<int64_t> shape;

  bool present() const { return type != 0; }
  size_t rank() const { return shape.size(); }
};

/// The attributes a rule reads, from whichever attribute type the caller holds.
class CallAttributes {
 public:
  virtual ~CallAttributes() = default;
  virtual int64_t get_int(std::string_view name, int64_t fallback) const = 0;
  virtual std::string get_string(std::string_view name) const = 0;
  virtual std::vector<int64_t> get_ints(std::string_view name) const = 0;
};

/// One kernel call as the rules see it.
struct KernelCall {
  std::string_view domain;  ///< "" or "ai.onnx" for ONNX, "ai.planner"
  std::string_view op_type;
  std::vector<CallTensor> inputs, outputs;
  const CallAttributes* attributes = nullptr;
};

/// The most dimensions the device's strided kernels take (cuda/device_kernels.h kMaxDims and
/// copy_math.h kCopyMaxDims).
inline constexpr size_t kCudaMaxDims = 8;
/// The widest pooling window, per axis, the device's pooling gradient takes (pool_math.h).
inline constexpr int64_t kCudaPoolMaxWindow = 32;

namespace cuda_host_detail {

template <size_t N>
constexpr bool one_of(std::string_view s, const std::string_view (&set)[N]) {
  for (std::string_view x : set)
    if (s == x) return true;
  return false;
}

constexpr int32_t kF32 = 1, kI32 = 6, kI64 = 7, kBool = 9, kF16 = 10, kBF16 = 16;

/// f32 as the kernels see it (16-bit floats are widened first).
constexpr bool floating(int32_t type) {
  return type == kF32 || type == kF16 || type == kBF16;
}
constexpr int32_t widened(int32_t type) {
  return type == kF16 || type == kBF16 ? kF32 : type;
}

// The element-wise kernels on f32 only (the cpu kernel takes integers too).
inline constexpr std::string_view kUnaryOps[] = {"Relu",        "Sigmoid",   "Tanh",
                                                 "Erf",         "Sqrt",      "Exp",
                                                 "Log",         "Abs",       "Neg",
                                                 "Gelu",        "Softplus",  "LeakyRelu",
                                                 "Elu",         "Selu",      "Reciprocal",
                                                 "Softsign",    "Tan",       "Asin",
                                                 "Acos",        "Atan",      "Sinh",
                                                 "Cosh",        "Asinh",     "Acosh",
                                                 "Atanh",       "Celu",      "ThresholdedRelu",
                                                 "Shrink",      "Round",     "Sign",
                                                 "HardSigmoid", "Sin",       "Cos",
                                                 "Mish",        "HardSwish", "Ceil",
                                                 "Floor",       "Clip",      "ReduceMean",
                                                 "ReduceSum",   "ReduceMax", "ReduceMin"};
inline constexpr std::string_view kBinaryOps[] = {"Add", "Sub", "Mul", "Div", "Pow"};
inline constexpr std::string_view kVariadicOps[] = {"Sum", "Max", "Min", "Mean"};
inline constexpr std::string_view kCompareOps[] = {
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"};
// Kernels on a strided or copy-plan descriptor of at most kCudaMaxDims dimensions.
inline constexpr std::string_view kStridedOps[] = {
    "Add",        "Sub",       "Mul",    "Div",   "Pow",       "Sum",         "Max",
    "Min",        "Mean",      "Equal",  "Less",  "Greater",   "LessOrEqual", "GreaterOrEqual",
    "And",        "Or",        "Xor",    "Where", "Transpose", "Pad",         "Expand",
    "Tile",       "Slice",     "Concat", "Split", "UnaryGrad", "DivGradB",    "WhereGrad",
    "ReduceGrad", "SliceGrad", "PadGrad"};

// The casts the device runs (cuda/shape_ops.cu launch_cast, launch_widen, launch_narrow), on
// widened types.
constexpr bool device_cast(int32_t from, int32_t to) {
  from = widened(from), to = widened(to);
  if (from == to) return true;
  constexpr std::array<std::array<int32_t, 2>, 6> kPairs = {
      {{kI64, kF32}, {kI32, kF32}, {kI32, kI64}, {kBool, kF32}, {kBool, kI64}, {kBool, kI32}}};
  for (const auto& p : kPairs)
    if (p[0] == from && p[1] == to) return true;
  return false;
}

inline int64_t attr_int(const KernelCall& c, std::string_view name, int64_t fallback) {
  return c.attributes ? c.attributes->get_int(name, fallback) : fallback;
}
inline std::string attr_string(const KernelCall& c, std::string_view name) {
  return c.attributes ? c.attributes->get_string(name) : std::string();
}
inline std::vector<int64_t> attr_ints(const KernelCall& c, std::string_view name) {
  return c.attributes ? c.attributes->get_ints(name) : std::vector<int64_t>();
}

// cuDNN's window (Conv, MaxPool, AveragePool and the convolution gradients): 1 to 3 spatial
// axes, explicit padding the same at both ends.
inline std::string_view cudnn_window_reason(const KernelCall& c, size_t spatial) {
  if (spatial < 1 || spatial > 3) return "cuDNN takes 1 to 3 spatial axes";
  const std::string pad = attr_string(c, "auto_pad");
  if (pad == "SAME_UPPER" || pad == "SAME_LOWER") return "";  // decided on the shapes at run time
  const std::vector<int64_t> pads = attr_ints(c, "pads");
  if (pads.size() == 2 * spatial)
    for (size_t d = 0; d < spatial; ++d)
      if (pads[d] != pads[d + spatial]) return "cuDNN takes padding the same at both ends";
  return "";
}

inline std::string_view pool_reason(const KernelCall& c) {
  if (c.inputs.empty()) return "";
  const CallTensor& x = c.inputs[0];
  if (!floating(x.type)) return "pooling on the device takes f32";
  if (x.rank() < 3 || x.rank() > 5) return "cuDNN pools 1 to 3 spatial axes";
  if (c.outputs.size() > 1 && c.outputs[1].present()) return "MaxPool's indices";
  if (attr_int(c, "ceil_mode", 0) != 0) return "ceil_mode";
  if (attr_int(c, "storage_order", 0) != 0) return "storage_order";
  for (int64_t d : attr_ints(c, "dilations"))
    if (d != 1) return "dilated pooling";
  if (attr_ints(c, "kernel_shape").size() != x.rank() - 2) return "";  // the kernel reports it
  return cudnn_window_reason(c, x.rank() - 2);
}

}  // namespace cuda_host_detail

/// Why the cuda backend runs `call` on the host, or "" where its device kernel runs it (as far
/// as types, shapes and attributes tell). Each reason is one short phrase for reports.
inline std::string_view cuda_host_reason(const KernelCall& c) {
  using namespace cuda_host_detail;
  const std::string_view op = c.op_type;
  const bool onnx = c.domain.empty() || c.domain == "ai.onnx";
  if (cuda_runs_on_host(c.domain, op)) return "no device kernel";
  if (onnx && op == "Shape") return "Shape reads the shape on the host";
  const CallTensor none;
  const CallTensor& a = c.inputs.empty() ? none : c.inputs[0];
  const CallTensor& b = c.inputs.size() < 2 ? none : c.inputs[1];
  if (one_of(op, kStridedOps)) {
    for (const auto* list : {&c.inputs, &c.outputs})
      for (const CallTensor& t : *list)
        if (t.present() && t.rank() > kCudaMaxDims) return "more than 8 dimensions";
  }
  if (onnx && one_of(op, kUnaryOps) && a.present() && !floating(a.type))
    return "an integer input to an f32 kernel";
  if (onnx && one_of(op, kBinaryOps)) {
    const bool pow_int = op == "Pow" && floating(a.type) && (b.type == kI64 || b.type == kI32);
    if (!floating(a.type) || (!floating(b.type) && !pow_int))
      return "an integer input to an f32 kernel";
  }
  if (onnx && one_of(op, kVariadicOps))
    for (const CallTensor& t : c.inputs)
      if (t.present() && !floating(t.type)) return "an integer input to an f32 kernel";
  if (onnx && one_of(op, kCompareOps)) {
    const int32_t ta = widened(a.type), tb = widened(b.type);
    if (ta != tb || (ta != kF32 && ta != kBool)) return "a comparison of integers";
  }
  if (onnx && op == "Cast" && !c.outputs.empty() && !device_cast(a.type, c.outputs[0].type))
    return "a cast the device lacks";
  if (onnx && (op == "MaxPool" || op == "AveragePool")) return pool_reason(c);
  if ((onnx && op == "Conv") || (!onnx && (op == "ConvGradData" || op == "ConvGradFilter"))) {
    const size_t rank =
        op == "ConvGradData" ? (c.outputs.empty() ? 0 : c.outputs[0].rank()) : a.rank();
    return rank >= 2 ? cudnn_window_reason(c, rank - 2) : std::string_view();
  }
  if (!onnx && op == "ReduceGrad") {
    const std::string reduce = attr_string(c, "op");
    if (reduce != "ReduceSum" && reduce != "ReduceMean") return "Max/Min gradients split ties";
  }
  if (!onnx && op == "PoolGrad")
    for (int64_t k : attr_ints(c, "kernel_shape"))
      if (k > kCudaPoolMaxWindow) return "a pooling window wider than 32";
  return "";
}

}  // namespace planner::rt
