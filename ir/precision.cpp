// Precision names and the storage type of activations.
#include "ir/precision.h"

namespace planner::ir {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp8:
      return "fp8";
  }
  return "fp32";
}

std::optional<Precision> precision_from_name(std::string_view name) {
  for (Precision p :
       {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16, Precision::kFp8})
    if (precision_name(p) == name) return p;
  return std::nullopt;
}

DType activation_dtype(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return DType::kFloat16;
    case Precision::kBf16:
    case Precision::kFp8:
      return DType::kBFloat16;
    default:
      return DType::kFloat32;
  }
}

}  // namespace planner::ir
