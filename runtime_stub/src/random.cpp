// Counter-based uniform initialisation (splitmix64), identical on every platform.
#include "planner_rt/random.h"

#include <cmath>

#include "planner_rt/half.h"

namespace planner::rt {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t tensor_key(uint64_t seed, std::string_view name) {
  return splitmix64(splitmix64(seed) ^ name_hash(name));
}

double uniform_from_key(uint64_t key, uint64_t index) {
  // Two rounds so neighbouring indices decorrelate; the top 24 bits make a float-exact value.
  const uint64_t bits = splitmix64(key ^ splitmix64(index));
  return static_cast<double>(bits >> 40) * (1.0 / 16777216.0);
}

}  // namespace

uint64_t name_hash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

double uniform01(uint64_t seed, std::string_view name, uint64_t index) {
  return uniform_from_key(tensor_key(seed, name), index);
}

void fill_uniform(const Tensor& region, uint64_t seed, std::string_view name,
                  const Shape& global_shape, const Shape& region_offset, double lo, double hi) {
  const std::string where = "fill_uniform '" + std::string(name) + "': ";
  if (region.shape.size() != global_shape.size() || region_offset.size() != global_shape.size())
    throw Error(where + "region " + shape_to_string(region.shape) + " at " +
                shape_to_string(region_offset) + " does not match the global shape " +
                shape_to_string(global_shape));
  for (size_t d = 0; d < global_shape.size(); ++d)
    if (region_offset[d] < 0 || region.shape[d] < 0 ||
        region_offset[d] + region.shape[d] > global_shape[d])
      throw Error(where + "region " + shape_to_string(region.shape) + " at " +
                  shape_to_string(region_offset) + " lies outside " +
                  shape_to_string(global_shape));
  const uint64_t key = tensor_key(seed, name);
  const int64_t n = region.numel();
  const size_t r = global_shape.size();
  std::vector<int64_t> gst(r, 1);
  for (int64_t i = static_cast<int64_t>(r) - 2; i >= 0; --i)
    gst[static_cast<size_t>(i)] =
        gst[static_cast<size_t>(i) + 1] * global_shape[static_cast<size_t>(i) + 1];
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = 0;
    for (size_t d = 0; d < r; ++d) g += (idx[d] + region_offset[d]) * gst[d];
    const double u = uniform_from_key(key, static_cast<uint64_t>(g));
    const double v = lo + (hi - lo) * u;
    switch (region.dtype) {
      case DType::kFloat32:
        static_cast<float*>(region.data)[i] = static_cast<float>(v);
        break;
      case DType::kFloat16:
        static_cast<uint16_t*>(region.data)[i] = f32_to_f16(static_cast<float>(v));
        break;
      case DType::kBFloat16:
        static_cast<uint16_t*>(region.data)[i] = f32_to_bf16(static_cast<float>(v));
        break;
      case DType::kInt64:
        static_cast<int64_t*>(region.data)[i] = static_cast<int64_t>(std::floor(v));
        break;
      case DType::kInt32:
        static_cast<int32_t*>(region.data)[i] = static_cast<int32_t>(std::floor(v));
        break;
      case DType::kUInt8:
        static_cast<uint8_t*>(region.data)[i] = static_cast<uint8_t>(std::floor(v));
        break;
      case DType::kBool:
        static_cast<bool*>(region.data)[i] = u < 0.5;
        break;
      default:
        throw Error(where + "cannot fill a tensor of type " +
                    std::string(dtype_name(region.dtype)));
    }
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < region.shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

void fill_uniform(const Tensor& tensor, uint64_t seed, std::string_view name, double lo,
                  double hi) {
  fill_uniform(tensor, seed, name, tensor.shape, Shape(tensor.shape.size(), 0), lo, hi);
}

}  // namespace planner::rt
