// The precision boundary on host tensors, and the TF32 and FP8 switches.
#include "precision_boundary.h"

#include <atomic>
#include <map>

#include "planner_rt/half.h"
#include "planner_rt/precision.h"

namespace planner::rt {

namespace {
std::atomic<bool> tf32{false};
std::atomic<bool> fp8{false};
}  // namespace

void set_tf32(bool on) {
  tf32.store(on);
}

bool tf32_enabled() {
  return tf32.load();
}

void set_fp8(bool on) {
  fp8.store(on);
}

bool fp8_enabled() {
  return fp8.load();
}

bool is_fp8_matmul_op(std::string_view op_type) {
  return op_type == "MatMul" || op_type == "Gemm" || op_type == "MatMulTransB" ||
         op_type == "MatMulGradWeight";
}

bool is_tensor_core_op(std::string_view op_type) {
  return op_type == "MatMul" || op_type == "Gemm" || op_type == "Conv" ||
         op_type == "ConvGradData" || op_type == "ConvGradFilter";
}

}  // namespace planner::rt

namespace planner::rt::kernels {

namespace {

// f32 values of a host tensor of f32 or a 16-bit type.
void widen(const Tensor& t, float* out) {
  const int64_t n = t.numel();
  const auto* bits = static_cast<const uint16_t*>(t.data);
  if (t.dtype == DType::kFloat16)
    for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(bits[i]);
  else if (t.dtype == DType::kBFloat16)
    for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(bits[i]);
  else
    std::memcpy(out, t.data, t.bytes());
}

// Rounds n values in place to what type `half` holds (f16, bf16) or to TF32 (kFloat32).
void round_values(float* v, int64_t n, DType half) {
  if (half == DType::kFloat16)
    for (int64_t i = 0; i < n; ++i) v[i] = round_to_f16(v[i]);
  else if (half == DType::kBFloat16)
    for (int64_t i = 0; i < n; ++i) v[i] = round_to_bf16(v[i]);
  else
    for (int64_t i = 0; i < n; ++i) v[i] = round_to_tf32(v[i]);
}

// Stores f32 values into a host tensor of f32 or a 16-bit type, rounding to nearest even.
void narrow(const float* v, const Tensor& t) {
  const int64_t n = t.numel();
  auto* bits = static_cast<uint16_t*>(t.data);
  if (t.dtype == DType::kFloat16)
    for (int64_t i = 0; i < n; ++i) bits[i] = f32_to_f16(v[i]);
  else if (t.dtype == DType::kBFloat16)
    for (int64_t i = 0; i < n; ++i) bits[i] = f32_to_bf16(v[i]);
  else
    std::memcpy(t.data, v, t.bytes());
}

}  // namespace

BoundaryPlan plan_boundary(std::string_view op_type, std::span<const Tensor> inputs,
                           std::span<const Tensor> outputs) {
  BoundaryPlan plan;
  for (auto list : {inputs, outputs})
    for (const Tensor& t : list)
      if (t.is_half() && plan.half == DType::kUndefined) plan.half = t.dtype;
  if (is_tensor_core_op(op_type)) {
    plan.round_to_half = plan.half != DType::kUndefined;
    plan.round_to_tf32 = !plan.round_to_half && tf32_enabled();
  }
  // FP8 matrix products: the FP8 cast replaces TF32's rounding (its values are exact in TF32,
  // which is what a TF32 cuBLAS math mode then sees on cuda); a 16-bit cast still comes first.
  if (is_fp8_matmul_op(op_type) && fp8_enabled()) {
    plan.round_to_fp8 = true;
    plan.round_to_tf32 = false;
  }
  return plan;
}

Attributes boundary_attributes(const KernelContext& ctx, const BoundaryPlan& plan) {
  Attributes attrs = ctx.attrs;
  if (ctx.op_type == "Cast" && ctx.has_out(0) && ctx.outputs[0].is_half())
    attrs["to"] = static_cast<int64_t>(DType::kFloat32);
  return attrs;
}

void run_host_boundary(const KernelContext& ctx, const BoundaryPlan& plan,
                       const std::function<void(const KernelContext&)>& fn) {
  // One f32 copy per distinct 16-bit buffer, so tensors that alias stay aliased.
  std::map<const void*, std::vector<float>> scratch;
  auto f32_view = [&](const Tensor& t) -> Tensor {
    auto [it, fresh] = scratch.try_emplace(t.data);
    if (fresh) {
      it->second.resize(static_cast<size_t>(std::max<int64_t>(t.numel(), 1)));
      widen(t, it->second.data());
    }
    return Tensor(DType::kFloat32, t.shape, it->second.data());
  };
  std::vector<Tensor> ins(ctx.inputs.begin(), ctx.inputs.end());
  std::vector<std::vector<float>> rounded;  // operands rounded for a tensor-core operator
  rounded.reserve(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    Tensor& t = ins[i];
    if (!t.present()) continue;
    if (t.is_half()) t = f32_view(t);
    if (t.dtype != DType::kFloat32) continue;
    // Under mixed precision every floating operand is cast to 16 bit (a 16-bit input already
    // is); under TF32 only the two matrix operands are rounded, the bias stays f32; under FP8
    // the two matrix operands (16-bit values by then) are cast to FP8, the bias is not.
    const bool to_half = plan.round_to_half && !ctx.inputs[i].is_half();
    const bool to_tf32 = plan.round_to_tf32 && i < 2;
    const bool to_fp8 = plan.round_to_fp8 && i < 2;
    if (!to_half && !to_tf32 && !to_fp8) continue;
    rounded.emplace_back(static_cast<size_t>(std::max<int64_t>(t.numel(), 1)));
    float* v = rounded.back().data();
    std::memcpy(v, t.data, t.bytes());
    if (to_half || to_tf32)
      round_values(v, t.numel(), plan.round_to_half ? plan.half : DType::kFloat32);
    if (to_fp8)
      for (int64_t j = 0; j < t.numel(); ++j) v[j] = round_to_fp8_mantissa(v[j]);
    t = Tensor(DType::kFloat32, t.shape, v);
  }
  std::vector<Tensor> outs(ctx.outputs.begin(), ctx.outputs.end());
  for (Tensor& t : outs)
    if (t.present() && t.is_half()) t = f32_view(t);
  const Attributes attrs = boundary_attributes(ctx, plan);
  KernelContext f32_ctx{ctx.op_type, ctx.node, attrs, ins, outs};
  fn(f32_ctx);
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& real = ctx.outputs[i];
    if (!real.present() || outs[i].dtype != DType::kFloat32) continue;
    if (real.is_half()) narrow(static_cast<const float*>(outs[i].data), real);
  }
}

void run_on_host(const KernelContext& ctx, KernelFn fn) {
  const BoundaryPlan plan = plan_boundary(ctx.op_type, ctx.inputs, ctx.outputs);
  if (plan.needed())
    run_host_boundary(ctx, plan, fn);
  else
    fn(ctx);
}

}  // namespace planner::rt::kernels
