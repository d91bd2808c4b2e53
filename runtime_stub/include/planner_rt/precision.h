// The numeric precision a launcher runs its program at, as far as kernels need to know it.
//
// 16-bit storage needs no switch: f16 and bf16 tensors say so by their dtype, and every kernel
// call that touches one runs at the precision boundary (kernels.h, docs/runtime.md): 16-bit
// inputs widened to f32, the f32 kernel, outputs rounded back to nearest even. What the dtypes
// cannot say is whether f32 matmuls and convolutions run on TF32 tensor cores, or matrix
// products on FP8 ones: those are process-wide switches, which a generated launcher sets from
// its program before the first step.
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

/// Whether the two matrix operands of MatMul, Gemm, MatMulTransB and MatMulGradWeight are cast
/// to FP8 e4m3, as FP8 training runs linear layers (torchao's Float8Linear, Transformer Engine):
/// activations stay in their storage type, each product's operands are scaled and cast to FP8
/// on FP8 tensor cores, results and accumulation are f32 (rounded to the output's type). Emulated
/// on both backends by rounding the operands' mantissas to 3 bits (round_to_fp8_mantissa:
/// ideal per-tensor scaling, no range limit) after any 16-bit cast; Gemm's bias and every other
/// operator are unchanged. Off by default. Applies to every rank of the process.
void set_fp8(bool on);
/// The current FP8 switch.
bool fp8_enabled();

/// Whether operator `op_type` is a matrix product whose operands (inputs 0 and 1) are cast to
/// FP8 under set_fp8(true): MatMul, Gemm, MatMulTransB, MatMulGradWeight.
bool is_fp8_matmul_op(std::string_view op_type);

/// Whether operator `op_type` is one AMP runs on tensor cores (MatMul, Gemm, Conv,
/// ConvGradData, ConvGradFilter): the operators whose operands are rounded to the 16-bit type
/// under mixed precision, or to TF32 under set_tf32(true).
bool is_tensor_core_op(std::string_view op_type);

}  // namespace planner::rt
