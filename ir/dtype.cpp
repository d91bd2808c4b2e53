// Element type tables.
#include "ir/dtype.h"

#include <array>
#include <utility>

namespace planner::ir {
namespace {

struct DTypeInfo {
  DType dtype;
  int64_t size;
  std::string_view name;
};

constexpr std::array<DTypeInfo, 14> kDTypes = {{
    {DType::kFloat32, 4, "f32"},
    {DType::kUInt8, 1, "u8"},
    {DType::kInt8, 1, "i8"},
    {DType::kUInt16, 2, "u16"},
    {DType::kInt16, 2, "i16"},
    {DType::kInt32, 4, "i32"},
    {DType::kInt64, 8, "i64"},
    {DType::kString, 8, "str"},
    {DType::kBool, 1, "bool"},
    {DType::kFloat16, 2, "f16"},
    {DType::kFloat64, 8, "f64"},
    {DType::kUInt32, 4, "u32"},
    {DType::kUInt64, 8, "u64"},
    {DType::kBFloat16, 2, "bf16"},
}};

const DTypeInfo* find(DType dtype) {
  for (const auto& info : kDTypes)
    if (info.dtype == dtype) return &info;
  return nullptr;
}

}  // namespace

int64_t dtype_size(DType dtype) {
  const DTypeInfo* info = find(dtype);
  return info ? info->size : 0;
}

std::string_view dtype_name(DType dtype) {
  const DTypeInfo* info = find(dtype);
  return info ? info->name : "?";
}

std::optional<DType> dtype_from_onnx(int32_t code) {
  const DTypeInfo* info = find(static_cast<DType>(code));
  if (!info) return std::nullopt;
  return info->dtype;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : kDTypes)
    if (info.name == name) return info.dtype;
  return std::nullopt;
}

bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kFloat64 ||
         dtype == DType::kBFloat16;
}

}  // namespace planner::ir
