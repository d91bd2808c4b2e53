// What the cuda backend's kernel files share to launch one thread per element: the block size,
// a grid that covers n elements (capped; grid-stride loops do the rest), and the loop itself.
#pragma once

#include <cstdint>

namespace planner::rt::cuda {

inline constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65535 * 8) b = 65535 * 8;  // grid-stride loops cover the rest
  return static_cast<unsigned>(b);
}

}  // namespace planner::rt::cuda

/// `for` over i in [0, n) with a stride of the whole grid.
#define GRID_STRIDE(i, n)                                                                \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
