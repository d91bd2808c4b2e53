// The precision boundary on device tensors: kernel calls that touch 16-bit floats or cast their
// operands to FP8. Tensor-core operators (MatMul and Gemm on cuBLAS, convolutions on cuDNN) get
// their operands in 16 bit and run natively; every other kernel, and every matrix product with
// FP8 on, sees f32 copies (FP8 operands emulated by rounding), as on the cpu backend.
#include "../precision_boundary.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "planner_rt/precision.h"
#include "precision_kernels.h"

namespace planner::rt::kernels {

namespace {

// Device scratch of one call, stream-ordered (no device-wide synchronisation), freed after
// the work queued on it.
class CallScratch {
 public:
  explicit CallScratch(cudaStream_t stream) : stream_(stream) {}
  CallScratch(const CallScratch&) = delete;
  CallScratch& operator=(const CallScratch&) = delete;
  ~CallScratch() {
    for (void* p : blocks_) cudaFreeAsync(p, stream_);
  }
  void* get(size_t bytes) {
    void* p = nullptr;
    PLANNER_CUDA_CHECK(cudaMallocAsync(&p, std::max<size_t>(bytes, 4), stream_));
    blocks_.push_back(p);
    return p;
  }

 private:
  cudaStream_t stream_;
  std::vector<void*> blocks_;
};

int code(DType d) {
  return static_cast<int>(d);
}

// An f32 device copy of a 16-bit tensor.
Tensor widened(const Tensor& t, CallScratch& scratch, cudaStream_t stream) {
  auto* y = static_cast<float*>(scratch.get(static_cast<size_t>(t.numel()) * 4));
  cuda::launch_widen(code(t.dtype), t.data, y, t.numel(), stream);
  return Tensor(DType::kFloat32, t.shape, y);
}

// A `half` device copy of an f32 tensor, rounded to nearest even.
Tensor narrowed(const Tensor& t, DType half, CallScratch& scratch, cudaStream_t stream) {
  void* y = scratch.get(static_cast<size_t>(t.numel()) * 2);
  cuda::launch_narrow(code(half), static_cast<const float*>(t.data), y, t.numel(), stream);
  return Tensor(half, t.shape, y);
}

// Every kernel but the tensor-core ones (and convolutions with an f32 result, and matrix
// products with FP8 on): f32 copies in, f32 scratch out, rounded back.
void run_widened(const KernelContext& ctx, const BoundaryPlan& plan, KernelFn cuda_fn,
                 KernelFn cpu) {
  const cudaStream_t stream = cuda::context().stream;
  CallScratch scratch(stream);
  std::vector<Tensor> ins, outs;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& t = ctx.inputs[i];
    const bool to_fp8 = plan.round_to_fp8 && i < 2;
    if (t.present() && t.is_half()) {
      ins.push_back(widened(t, scratch, stream));
    } else if (t.present() && t.dtype == DType::kFloat32 && (plan.round_to_half || to_fp8)) {
      // A tensor-core operator's f32 operand, cast to 16 bit as AMP does (kept in f32), or a
      // matrix operand to be cast to FP8: a copy, rounded below.
      auto* copy = static_cast<float*>(scratch.get(t.bytes()));
      PLANNER_CUDA_CHECK(
          cudaMemcpyAsync(copy, t.data, t.bytes(), cudaMemcpyDeviceToDevice, stream));
      if (plan.round_to_half) cuda::launch_round_f32(code(plan.half), copy, t.numel(), stream);
      ins.push_back(Tensor(DType::kFloat32, t.shape, copy));
    } else {
      ins.push_back(t);
    }
    // The two matrix operands of an FP8 product (call-private f32 copies by now): their
    // mantissas rounded to e4m3's, after any 16-bit cast, as on the cpu backend.
    if (to_fp8 && ins.back().present() && ins.back().dtype == DType::kFloat32)
      cuda::launch_round_fp8(static_cast<float*>(ins.back().data), ins.back().numel(), stream);
  }
  for (const Tensor& t : ctx.outputs)
    outs.push_back(t.present() && t.is_half() ? widened(t, scratch, stream) : t);
  const Attributes attrs = boundary_attributes(ctx, plan);
  KernelContext f32_ctx{ctx.op_type, ctx.node, attrs, ins, outs};
  if (cuda_fn)
    cuda_fn(f32_ctx);
  else
    host_fallback(f32_ctx, cpu);
  for (size_t i = 0; i < outs.size(); ++i)
    if (ctx.outputs[i].present() && ctx.outputs[i].is_half())
      cuda::launch_narrow(code(ctx.outputs[i].dtype), static_cast<const float*>(outs[i].data),
                          ctx.outputs[i].data, outs[i].numel(), stream);
}

// MatMul, Gemm, Conv and its gradients under mixed precision, as AMP runs them: every floating
// operand in the 16-bit type (f32 weights cast), f32 accumulation on tensor cores. cuBLAS
// writes an f32 result, rounded here where the output is 16-bit and kept where it is f32 (a
// parameter gradient); cuDNN takes one type for all its tensors, so convolutions with a
// 16-bit result write it directly (those with an f32 result run widened, see run_on_device).
void run_tensor_core(const KernelContext& ctx, const BoundaryPlan& plan, KernelFn cuda_fn) {
  const cudaStream_t stream = cuda::context().stream;
  CallScratch scratch(stream);
  const bool gemm = ctx.op_type == "MatMul" || ctx.op_type == "Gemm";
  std::vector<Tensor> ins;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& t = ctx.inputs[i];
    if (!t.present() || t.dtype != DType::kFloat32 || i >= 2) {
      ins.push_back(t);
      continue;
    }
    ins.push_back(narrowed(t, plan.half, scratch, stream));
  }
  // Biases (Gemm's C, Conv's B) are added in f32 by the kernels: hand them over as f32
  // holding 16-bit values, which is what AMP's cast makes of them.
  for (size_t i = 2; i < ins.size(); ++i) {
    if (!ins[i].present()) continue;
    Tensor t = ins[i].is_half() ? widened(ins[i], scratch, stream) : ins[i];
    if (!ctx.inputs[i].is_half()) {
      auto* copy = static_cast<float*>(scratch.get(t.bytes()));
      PLANNER_CUDA_CHECK(
          cudaMemcpyAsync(copy, t.data, t.bytes(), cudaMemcpyDeviceToDevice, stream));
      cuda::launch_round_f32(code(plan.half), copy, t.numel(), stream);
      t = Tensor(DType::kFloat32, t.shape, copy);
    }
    ins[i] = t;
  }
  std::vector<Tensor> outs;
  for (const Tensor& t : ctx.outputs) {
    if (!t.present()) {
      outs.push_back(t);
    } else if (gemm) {
      outs.push_back(
          Tensor(DType::kFloat32, t.shape, scratch.get(static_cast<size_t>(t.numel()) * 4)));
    } else {
      outs.push_back(
          t.dtype == plan.half
              ? t
              : Tensor(plan.half, t.shape, scratch.get(static_cast<size_t>(t.numel()) * 2)));
    }
  }
  KernelContext half_ctx{ctx.op_type, ctx.node, ctx.attrs, ins, outs};
  cuda_fn(half_ctx);
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& real = ctx.outputs[i];
    if (!real.present() || outs[i].data == real.data) continue;
    if (gemm) {
      auto* v = static_cast<float*>(outs[i].data);
      if (real.is_half())
        cuda::launch_narrow(code(real.dtype), v, real.data, real.numel(), stream);
      else  // an f32 result (a parameter gradient) stays f32
        PLANNER_CUDA_CHECK(
            cudaMemcpyAsync(real.data, v, real.bytes(), cudaMemcpyDeviceToDevice, stream));
    }
  }
}

}  // namespace

void run_on_device(const KernelContext& ctx, KernelFn cuda_fn, KernelFn cpu) {
  const BoundaryPlan plan = plan_boundary(ctx.op_type, ctx.inputs, ctx.outputs);
  if (plan.half == DType::kUndefined && !plan.round_to_fp8) {
    // f32 (TF32, when on, is the cuBLAS/cuDNN math mode the kernels set).
    if (cuda_fn)
      cuda_fn(ctx);
    else
      host_fallback(ctx, cpu);
    return;
  }
  // A convolution with an f32 result (a filter gradient) cannot be one cuDNN type: it runs on
  // f32 copies that hold 16-bit values, so its products are as exact as on tensor cores.
  bool f32_result = false;
  for (const Tensor& t : ctx.outputs) f32_result |= t.present() && t.dtype == DType::kFloat32;
  const bool gemm = ctx.op_type == "MatMul" || ctx.op_type == "Gemm";
  // FP8 products run widened: their operands are rounded in f32 copies (the 16-bit tensor-core
  // path would hand cuBLAS unrounded 16-bit operands).
  if (plan.round_to_half && !plan.round_to_fp8 && cuda_fn && (gemm || !f32_result))
    return run_tensor_core(ctx, plan, cuda_fn);
  run_widened(ctx, plan, cuda_fn, cpu);
}

}  // namespace planner::rt::kernels
