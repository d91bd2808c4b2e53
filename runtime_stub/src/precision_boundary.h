// The precision boundary: how a kernel call that touches 16-bit floats (or runs at TF32) is
// turned into a call of an f32 kernel, in one place for every kernel of every backend.
#pragma once

#include <functional>

#include "kernel_util.h"

namespace planner::rt::kernels {

/// What the boundary does to one call (see plan_boundary).
struct BoundaryPlan {
  /// The 16-bit float type among the call's tensors (f16 or bf16), kUndefined when none.
  DType half = DType::kUndefined;
  /// A tensor-core operator under mixed precision: its f32 operands are rounded to `half` (AMP
  /// casts them); products are exact and accumulate in f32. A 16-bit result is rounded once; an
  /// f32 one (a parameter gradient) is kept in f32, as cuBLAS's 16-bit-in / f32-out GEMMs and
  /// Megatron-LM's fused f32 weight-gradient accumulation keep it (a sum over the whole batch
  /// would overflow f16).
  bool round_to_half = false;
  /// A tensor-core operator with TF32 on (and no FP8 cast): its two matrix operands are
  /// rounded to TF32.
  bool round_to_tf32 = false;
  /// A matrix product with FP8 on (is_fp8_matmul_op): its two matrix operands (inputs 0 and 1),
  /// after any widening and 16-bit cast, have their mantissas rounded to e4m3's 3 bits
  /// (round_to_fp8_mantissa); a bias stays as it is. Takes the place of TF32 rounding (FP8
  /// values are exact in TF32).
  bool round_to_fp8 = false;
  /// Whether the call needs the boundary at all (else the kernel runs on the tensors as given).
  bool needed() const { return half != DType::kUndefined || round_to_tf32 || round_to_fp8; }
};

/// How the boundary treats a call of `op_type` on these tensors.
BoundaryPlan plan_boundary(std::string_view op_type, std::span<const Tensor> inputs,
                           std::span<const Tensor> outputs);

/// Runs f32 kernel `fn` for a call on host tensors at the boundary `plan`: 16-bit inputs are
/// widened into f32 scratch (exact), the operands of tensor-core operators rounded as the plan
/// says (to the 16-bit type or TF32, then to FP8's mantissa), 16-bit outputs computed into f32
/// scratch and rounded to nearest even into the real outputs. Integer and boolean tensors pass
/// through untouched. Precondition: plan.needed().
void run_host_boundary(const KernelContext& ctx, const BoundaryPlan& plan,
                       const std::function<void(const KernelContext&)>& fn);

/// Runs cpu kernel `fn` on host tensors: through the boundary when the call needs it, else
/// directly. What run_kernel does on the cpu backend and run_cpu_kernel on every backend.
void run_on_host(const KernelContext& ctx, KernelFn fn);

#if PLANNER_RT_CUDA
/// Runs a call on device tensors (cuda/precision_cuda.cpp): `cuda` (or, when null, `cpu` through
/// the host fallback), at the device boundary when the call touches 16-bit floats or casts its
/// operands to FP8. Tensor-core operators get their operands in 16 bit for cuBLAS/cuDNN; every
/// other kernel (and every FP8 matrix product) sees f32.
void run_on_device(const KernelContext& ctx, KernelFn cuda, KernelFn cpu);
#endif

/// The attributes `fn` sees for a call whose 16-bit outputs became f32 scratch: Cast's `to`
/// says f32 then. Other operators keep theirs.
Attributes boundary_attributes(const KernelContext& ctx, const BoundaryPlan& plan);

}  // namespace planner::rt::kernels
