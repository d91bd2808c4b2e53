// Element types of tensors, with their sizes, short names and ONNX codes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace planner::ir {

/// Element type. Values match ONNX's TensorProto.DataType so the importer maps them directly.
enum class DType : int32_t {
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

/// Bytes per element (strings count as pointer-sized handles).
int64_t dtype_size(DType dtype);
/// Short name used in text forms and plan files: f32, f16, bf16, f64, i8 … i64, u8 … u64, bool,
/// str.
std::string_view dtype_name(DType dtype);
/// DType for an ONNX TensorProto data type code, if the planner supports it.
std::optional<DType> dtype_from_onnx(int32_t code);
/// DType from its short name (inverse of dtype_name).
std::optional<DType> dtype_from_name(std::string_view name);
bool is_floating(DType dtype);

}  // namespace planner::ir
