// Deterministic, platform-independent initialisation of parameters and inputs.
//
// The value of element i of a tensor depends only on the seed, the tensor's name and i's
// index in the tensor's GLOBAL shape (a counter-based generator: splitmix64 of a key and the
// index), so a rank holding a slice initialises exactly the values of that slice of the whole.
#pragma once

#include <cstdint>
#include <string_view>

#include "planner_rt/tensor.h"

namespace planner::rt {

/// 64-bit FNV-1a hash of a tensor name.
uint64_t name_hash(std::string_view name);

/// The uniform number in [0, 1) (a multiple of 2^-24, exact in f32) for global element
/// `index` of tensor `name` under `seed`.
double uniform01(uint64_t seed, std::string_view name, uint64_t index);

/// Fills `region` (a view of the block of the global tensor starting at `region_offset`, with
/// the region's own shape) with values uniform in [lo, hi): f32 get lo + (hi - lo) * u, i32
/// and i64 floor of that (use integer bounds, e.g. token ids in [0, vocab)), bool u < 0.5.
/// Throws Error when the region does not lie inside `global_shape`.
void fill_uniform(const Tensor& region, uint64_t seed, std::string_view name,
                  const Shape& global_shape, const Shape& region_offset, double lo = -1.0,
                  double hi = 1.0);

/// fill_uniform for a whole tensor (the region is everything).
void fill_uniform(const Tensor& tensor, uint64_t seed, std::string_view name, double lo = -1.0,
                  double hi = 1.0);

}  // namespace planner::rt
