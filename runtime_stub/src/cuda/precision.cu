// The 16-bit (and FP8 operand) conversion kernels of the cuda backend, on the shared
// conversions of half.h.
#include "device_kernels.h"
#include "planner_rt/half.h"
#include "precision_kernels.h"

namespace planner::rt::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65535 * 8) b = 65535 * 8;  // grid-stride loops cover the rest
  return static_cast<unsigned>(b);
}

#define GRID_STRIDE(i, n)                                                                \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

__device__ inline float to_f32(bool bf16, uint16_t h) {
  return bf16 ? bf16_to_f32(h) : f16_to_f32(h);
}

__device__ inline uint16_t to_half(bool bf16, float f) {
  return bf16 ? f32_to_bf16(f) : f32_to_f16(f);
}

__global__ void widen_kernel(bool bf16, const uint16_t* x, float* y, int64_t n) {
  GRID_STRIDE(i, n) {
    y[i] = to_f32(bf16, x[i]);
  }
}

__global__ void narrow_kernel(bool bf16, const float* x, uint16_t* y, int64_t n) {
  GRID_STRIDE(i, n) {
    y[i] = to_half(bf16, x[i]);
  }
}

__global__ void round_kernel(bool bf16, float* x, int64_t n) {
  GRID_STRIDE(i, n) {
    x[i] = to_f32(bf16, to_half(bf16, x[i]));
  }
}

__global__ void round_fp8_kernel(float* x, int64_t n) {
  GRID_STRIDE(i, n) {
    x[i] = round_to_fp8_mantissa(x[i]);
  }
}

__global__ void scale_half_kernel(bool bf16, uint16_t* y, int64_t n, float s) {
  GRID_STRIDE(i, n) {
    y[i] = to_half(bf16, to_f32(bf16, y[i]) * s);
  }
}

__global__ void fold_half_kernel(bool bf16, uint16_t* acc, const uint16_t* v, int64_t n, int op) {
  GRID_STRIDE(i, n) {
    const float a = to_f32(bf16, acc[i]), b = to_f32(bf16, v[i]);
    float r;
    switch (op) {
      case 0:
        r = a + b;
        break;
      case 1:
        r = a < b ? b : a;
        break;
      case 2:
        r = b < a ? b : a;
        break;
      default:
        r = a * b;
        break;
    }
    acc[i] = to_half(bf16, r);
  }
}

__global__ void channel_bias_half_kernel(bool bf16, uint16_t* y, const float* b, int64_t n,
                                         int64_t c, int64_t inner) {
  GRID_STRIDE(i, n) {
    y[i] = to_half(bf16, to_f32(bf16, y[i]) + b[(i / inner) % c]);
  }
}

}  // namespace

void launch_widen(int dtype, const void* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  widen_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dtype == 16, static_cast<const uint16_t*>(x),
                                                       y, n);
  check_launch("widen");
}

void launch_narrow(int dtype, const float* x, void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  narrow_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dtype == 16, x, static_cast<uint16_t*>(y),
                                                        n);
  check_launch("narrow");
}

void launch_round_f32(int dtype, float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  round_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dtype == 16, x, n);
  check_launch("round_f32");
}

void launch_round_fp8(float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  round_fp8_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n);
  check_launch("round_fp8");
}

void launch_fold_half(int dtype, void* acc, const void* v, int64_t n, int op, cudaStream_t stream) {
  if (n == 0) return;
  fold_half_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dtype == 16, static_cast<uint16_t*>(acc),
                                                           static_cast<const uint16_t*>(v), n, op);
  check_launch("fold_half");
}

void launch_scale_half(int dtype, void* y, int64_t n, float s, cudaStream_t stream) {
  if (n == 0) return;
  scale_half_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dtype == 16, static_cast<uint16_t*>(y),
                                                            n, s);
  check_launch("scale_half");
}

void launch_add_channel_bias_half(int dtype, void* y, const float* b, int64_t outer, int64_t c,
                                  int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * c * inner;
  if (n == 0) return;
  channel_bias_half_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      dtype == 16, static_cast<uint16_t*>(y), b, n, c, inner);
  check_launch("add_channel_bias_half");
}

}  // namespace planner::rt::cuda
