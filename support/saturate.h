// Converting a floating-point value to an integer type it does not fit is undefined behaviour
// in C++; model files hold any bits. These conversions saturate instead.
#pragma once

#include <cmath>
#include <cstdint>

namespace planner {

/// `v` as an int64: truncated toward zero, saturated at the type's bounds, NaN as 0.
inline int64_t saturating_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace planner
