// The numeric precision a launcher runs its program at, as far as kernels need to know it.
//
// 16-bit storage needs no switch: f16 and bf16 tensors say so by their dtype, and every kernel
// call that touches one runs at the precision boundary (kernels.h, docs/runtime.md): 16-bit
// inputs widened to f32, the f32 kernel, outputs rounded back to nearest even. What the dtypes
// cannot say is whether f32 matmuls and convolutions run on TF32 tensor cores: that is this
// process-wide switch, which a generated launcher sets from its program before the first step.
#pragma once

#include <string_view>

namespace planner::rt {

/// Whether MatMul, Gemm, Conv and the convolution gradients round their f32 operands to TF32
/// (10-bit mantissa, ties to even) and accumulate in f32, as TF32 tensor cores do: on cpu the
/// boundary rounds the operands; on cuda cuBLAS runs with CUBLAS_TF32_TENSOR_OP_MATH and cuDNN
/// with tensor-op math. Off by default (plain f32). Applies to every rank of the process.
void set_tf32(bool on);
/// The current TF32 switch.
bool tf32_enabled();

/// Whether operator `op_type` is one AMP runs on tensor cores (MatMul, Gemm, Conv,
/// ConvGradData, ConvGradFilter): the operators whose operands are rounded to the 16-bit type
/// under mixed precision, or to TF32 under set_tf32(true).
bool is_tensor_core_op(std::string_view op_type);

}  // namespace planner::rt
