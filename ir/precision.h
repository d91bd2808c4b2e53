// Numeric precision of a training or inference step, as the user asks for it with
// --precision: what the cost model, the plan file, codegen and the runtimes agree on.
#pragma once

#include <optional>
#include <string_view>

#include "ir/dtype.h"

namespace planner::ir {

/// How a step computes and stores floating-point values.
enum class Precision : uint8_t {
  kFp32,  ///< FP32 storage and FP32 arithmetic everywhere (no tensor cores for f32)
  kTf32,  ///< FP32 storage; matmuls and convolutions on TF32 tensor cores
  kFp16,  ///< mixed precision as PyTorch AMP: 16-bit activations and tensor-core matmuls,
          ///< FP32 master weights, gradients of parameters and optimizer state
  kBf16,  ///< the same with bfloat16
  kFp8,   ///< bf16's step with the matrix products of linear layers on FP8 tensor cores, their
          ///< operands scaled and cast to FP8 (torchao's Float8Linear, Transformer Engine)
};

/// "fp32", "tf32", "fp16", "bf16" or "fp8".
std::string_view precision_name(Precision p);
/// Inverse of precision_name.
std::optional<Precision> precision_from_name(std::string_view name);
/// The element type activations are stored in: f16, bf16, or f32 (fp32, tf32).
DType activation_dtype(Precision p);
/// Whether f32 matmuls and convolutions run on TF32 tensor cores.
inline bool uses_tf32(Precision p) {
  return p == Precision::kTf32;
}
/// Whether the step is mixed precision (16-bit activations).
inline bool is_mixed(Precision p) {
  return p == Precision::kFp16 || p == Precision::kBf16 || p == Precision::kFp8;
}
/// Whether linear layers' matrix products run on FP8 tensor cores.
inline bool uses_fp8(Precision p) {
  return p == Precision::kFp8;
}

}  // namespace planner::ir
