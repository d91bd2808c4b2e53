// Launchers of the cuda backend's 16-bit (and FP8 operand) conversion kernels (precision.cu):
// the device side of the precision boundary. They round exactly as the cpu backend does
// (planner_rt/half.h). `dtype` is an ONNX code: 10 (f16) or 16 (bf16).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace planner::rt::cuda {

/// y[i] = the f32 value of 16-bit x[i] (exact).
void launch_widen(int dtype, const void* x, float* y, int64_t n, cudaStream_t stream);
/// y[i] = x[i] rounded to the 16-bit type, nearest even.
void launch_narrow(int dtype, const float* x, void* y, int64_t n, cudaStream_t stream);
/// x[i] = x[i] rounded to the 16-bit type and back (an f32 tensor holding 16-bit values).
void launch_round_f32(int dtype, float* x, int64_t n, cudaStream_t stream);
/// x[i] = x[i] with its mantissa rounded to FP8 e4m3's 3 bits (round_to_fp8_mantissa: ties to
/// even, exponent range kept), in place: an FP8 matmul operand under set_fp8(true).
void launch_round_fp8(float* x, int64_t n, cudaStream_t stream);
/// acc = acc op v for 16-bit elements, each pair combined in f32 and rounded (NCCL's rule);
/// op 0 sum, 1 max, 2 min, 3 prod.
/// y *= s on 16-bit data (dtype: DType's value, f16 or bf16), computed in f32, rounded once.
void launch_scale_half(int dtype, void* y, int64_t n, float s, cudaStream_t stream);

void launch_fold_half(int dtype, void* acc, const void* v, int64_t n, int op, cudaStream_t stream);
/// Per-channel bias on a 16-bit y: y[(o*c + ch)*inner + i] = round(y + b[ch]).
void launch_add_channel_bias_half(int dtype, void* y, const float* b, int64_t outer, int64_t c,
                                  int64_t inner, cudaStream_t stream);

}  // namespace planner::rt::cuda
