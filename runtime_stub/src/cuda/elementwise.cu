// The cuda backend's element-wise kernels: one thread per output element in grid-stride loops,
// broadcasting by the Strided descriptors the host builds with the cpu kernels' stride rules.
#include <cstdint>

#include "device_kernels.h"
#include "launch_util.cuh"

namespace planner::rt::cuda {

namespace {

int64_t total_of(const Strided& s) {
  int64_t n = 1;
  for (int d = 0; d < s.rank; ++d) n *= s.shape[d];
  return n;
}

// The offset of output element i in operand k: the row-major multi-index of i dotted with the
// operand's broadcast strides.
__device__ inline int64_t offset_of(const Strided& s, int k, int64_t i) {
  int64_t off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t extent = s.shape[d];
    const int64_t idx = i % extent;
    i /= extent;
    off += idx * s.strides[k][d];
  }
  return off;
}

__global__ void unary_kernel(kernels::UnaryOp op, kernels::UnaryParams p, const float* x, float* y,
                             int64_t n) {
  GRID_STRIDE(i, n) {
    y[i] = static_cast<float>(kernels::unary_math::value(op, p, static_cast<double>(x[i])));
  }
}

__global__ void clip_kernel(const float* x, float* y, int64_t n, float lo, float hi) {
  GRID_STRIDE(i, n) {
    // std::min(std::max(x, lo), hi) exactly as the cpu kernel (NaN stays NaN)
    float v = x[i];
    v = v < lo ? lo : v;
    y[i] = hi < v ? hi : v;
  }
}

__device__ inline float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPow:
      return powf(a, b);
    case BinaryOp::kMax:
      if (isnan(a) || isnan(b)) return nanf("");
      return a > b ? a : b;
    case BinaryOp::kMin:
      if (isnan(a) || isnan(b)) return nanf("");
      return a < b ? a : b;
  }
  return a;
}

__global__ void binary_kernel(BinaryOp op, Strided s, int64_t n, const float* a, const float* b,
                              float* y) {
  GRID_STRIDE(i, n) {
    y[i] = apply_binary(op, a[offset_of(s, 0, i)], b[offset_of(s, 1, i)]);
  }
}

__global__ void pow_int_kernel(Strided s, int64_t n, const float* a, const void* b, bool b_i64,
                               float* y) {
  GRID_STRIDE(i, n) {
    const int64_t ob = offset_of(s, 1, i);
    const double e = b_i64 ? static_cast<double>(static_cast<const int64_t*>(b)[ob])
                           : static_cast<double>(static_cast<const int32_t*>(b)[ob]);
    y[i] = static_cast<float>(pow(static_cast<double>(a[offset_of(s, 0, i)]), e));
  }
}

template <typename T>
__device__ inline bool apply_compare(CompareOp op, T u, T v) {
  switch (op) {
    case CompareOp::kEqual:
      return u == v;
    case CompareOp::kLess:
      return u < v;
    case CompareOp::kGreater:
      return u > v;
    case CompareOp::kLessOrEqual:
      return u <= v;
    case CompareOp::kGreaterOrEqual:
      return u >= v;
    case CompareOp::kAnd:
      return u && v;
    case CompareOp::kOr:
      return u || v;
    case CompareOp::kXor:
      return static_cast<bool>(u) != static_cast<bool>(v);
  }
  return false;
}

template <typename T>
__global__ void compare_kernel(CompareOp op, Strided s, int64_t n, const T* a, const T* b,
                               bool* y) {
  GRID_STRIDE(i, n) {
    y[i] = apply_compare<T>(op, a[offset_of(s, 0, i)], b[offset_of(s, 1, i)]);
  }
}

__global__ void not_kernel(const bool* x, bool* y, int64_t n) {
  GRID_STRIDE(i, n) {
    y[i] = !x[i];
  }
}

template <typename T>
__global__ void where_kernel(Strided s, int64_t n, const bool* c, const T* a, const T* b, T* y) {
  GRID_STRIDE(i, n) {
    y[i] = c[offset_of(s, 0, i)] ? a[offset_of(s, 1, i)] : b[offset_of(s, 2, i)];
  }
}

__global__ void broadcast_scale_kernel(Strided s, int64_t n, const float* x, float scale,
                                       float* y) {
  GRID_STRIDE(i, n) {
    // float(double(x) * scale) as the cpu ReduceGrad does for Mean; scale 1 copies exactly
    y[i] = static_cast<float>(static_cast<double>(x[offset_of(s, 0, i)]) * scale);
  }
}

template <typename T>
__global__ void strided_copy_kernel(Strided s, int64_t n, const T* x, T* y) {
  GRID_STRIDE(i, n) {
    y[offset_of(s, 1, i)] = x[offset_of(s, 0, i)];
  }
}

__global__ void unary_grad_kernel(kernels::UnaryOp op, kernels::UnaryParams p, Strided s, int64_t n,
                                  const float* dy, const float* x, const float* y, float* dx) {
  GRID_STRIDE(i, n) {
    const double d =
        kernels::unary_math::derivative(op, p, x[offset_of(s, 0, i)], y[offset_of(s, 1, i)]);
    dx[i] = static_cast<float>(dy[i] * d);
  }
}

__global__ void pow_grad_kernel(Strided s, int64_t n, const float* dy, const float* x,
                                const void* e, int e_type, float* dx) {
  GRID_STRIDE(i, n) {
    const int64_t oe = offset_of(s, 1, i);
    const double ev = e_type == 0   ? static_cast<double>(static_cast<const float*>(e)[oe])
                      : e_type == 1 ? static_cast<double>(static_cast<const int32_t*>(e)[oe])
                                    : static_cast<double>(static_cast<const int64_t*>(e)[oe]);
    const double xv = x[offset_of(s, 0, i)];
    const double d = ev == 0 ? 0.0 : ev * pow(xv, ev - 1);
    dx[i] = static_cast<float>(dy[i] * d);
  }
}

__global__ void clip_grad_kernel(Strided s, int64_t n, const float* dy, const float* x,
                                 const float* y, float* dx, kernels::ClipBounds b) {
  GRID_STRIDE(i, n) {
    dx[i] = kernels::clip_grad_element(dy[i], x[offset_of(s, 0, i)], y[offset_of(s, 1, i)],
                                       b.bounded, b.lo, b.hi);
  }
}

__global__ void div_grad_b_kernel(Strided s, int64_t n, const float* dy, const float* y,
                                  const float* b, float* out) {
  GRID_STRIDE(i, n) {
    out[i] = -dy[i] * y[offset_of(s, 0, i)] / b[offset_of(s, 1, i)];
  }
}

__global__ void where_grad_kernel(Strided s, int64_t n, const bool* c, const float* dy,
                                  bool branch1, float* out) {
  GRID_STRIDE(i, n) {
    out[i] = (c[offset_of(s, 0, i)] == branch1) ? dy[i] : 0.0f;
  }
}

template <typename T>
__global__ void fold_kernel(T* acc, const T* v, int64_t n, int op) {
  GRID_STRIDE(i, n) {
    const T a = acc[i], b = v[i];
    switch (op) {
      case 0:
        acc[i] = a + b;
        break;
      case 1:
        acc[i] = a < b ? b : a;  // std::max(a, b)
        break;
      case 2:
        acc[i] = b < a ? b : a;  // std::min(a, b)
        break;
      default:
        acc[i] = a * b;
        break;
    }
  }
}

__global__ void fill_bool_kernel(bool* y, int64_t n, bool value) {
  GRID_STRIDE(i, n) {
    y[i] = value;
  }
}

__global__ void scale_kernel(float* y, int64_t n, float s) {
  GRID_STRIDE(i, n) {
    y[i] /= s;
  }
}

__global__ void channel_bias_kernel(float* y, const float* b, int64_t n, int64_t c, int64_t inner) {
  GRID_STRIDE(i, n) {
    y[i] += b[(i / inner) % c];
  }
}

__global__ void sgd_kernel(const float* p, const float* g, float* out, int64_t n, float lr,
                           float gs) {
  GRID_STRIDE(i, n) {
    out[i] = kernels::sgd_element(p[i], g[i], lr, gs);
  }
}

__global__ void momentum_kernel(const float* p, const float* g, const float* v, float* po,
                                float* vo, int64_t n, float lr, float mu, float gs) {
  GRID_STRIDE(i, n) {
    po[i] = kernels::momentum_element(p[i], g[i], v[i], lr, mu, gs, &vo[i]);
  }
}

__global__ void adam_kernel(const float* p, const float* g, const float* m, const float* v,
                            float* po, float* mo, float* vo, int64_t n, double lr, double b1,
                            double b2, double eps, double c1, double c2, double gs) {
  GRID_STRIDE(i, n) {
    po[i] =
        kernels::adam_element(p[i], g[i], m[i], v[i], lr, b1, b2, eps, c1, c2, gs, &mo[i], &vo[i]);
  }
}

// DropoutTrain and its gradient: the mask comes from train_math.h's counter-based hash, the
// very function the cpu kernel calls, so both backends draw the same elements.
__global__ void dropout_train_kernel(kernels::DropoutLayout l, uint64_t seed, float ratio,
                                     const float* x, float* y, bool* mask, int64_t n) {
  GRID_STRIDE(i, n) {
    kernels::dropout_train_element(l, seed, ratio, x, y, mask, i);
  }
}

__global__ void dropout_grad_kernel(const float* dy, const bool* mask, float* dx, int64_t n,
                                    float scale) {
  GRID_STRIDE(i, n) {
    dx[i] = mask[i] ? dy[i] * scale : 0.0f;
  }
}

}  // namespace

void launch_dropout_train(const kernels::DropoutLayout& layout, uint64_t seed, float ratio,
                          const float* x, float* y, bool* mask, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  dropout_train_kernel<<<blocks_for(n), kThreads, 0, stream>>>(layout, seed, ratio, x, y, mask, n);
  check_launch("dropout_train");
}

void launch_dropout_grad(const float* dy, const bool* mask, float* dx, int64_t n, float ratio,
                         cudaStream_t stream) {
  if (n == 0) return;
  dropout_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dy, mask, dx, n,
                                                              1.0f / (1.0f - ratio));
  check_launch("dropout_grad");
}

void launch_unary(kernels::UnaryOp op, kernels::UnaryParams p, const float* x, float* y, int64_t n,
                  cudaStream_t stream) {
  if (n == 0) return;
  unary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, p, x, y, n);
  check_launch("unary");
}

void launch_clip(const float* x, float* y, int64_t n, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return;
  clip_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, lo, hi);
  check_launch("clip");
}

void launch_binary(BinaryOp op, const Strided& s, const float* a, const float* b, float* y,
                   cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  binary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, s, n, a, b, y);
  check_launch("binary");
}

void launch_pow_int(const Strided& s, const float* a, const void* b, bool b_is_i64, float* y,
                    cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  pow_int_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, n, a, b, b_is_i64, y);
  check_launch("pow_int");
}

void launch_compare(CompareOp op, const Strided& s, const void* a, const void* b, bool is_float,
                    bool* y, cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  if (is_float)
    compare_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(
        op, s, n, static_cast<const float*>(a), static_cast<const float*>(b), y);
  else
    compare_kernel<bool><<<blocks_for(n), kThreads, 0, stream>>>(
        op, s, n, static_cast<const bool*>(a), static_cast<const bool*>(b), y);
  check_launch("compare");
}

void launch_not(const bool* x, bool* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  not_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  check_launch("not");
}

void launch_where(const Strided& s, const bool* c, const void* a, const void* b, void* y, int elem,
                  cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  switch (elem) {
    case 1:
      where_kernel<uint8_t><<<g, kThreads, 0, stream>>>(s, n, c, static_cast<const uint8_t*>(a),
                                                        static_cast<const uint8_t*>(b),
                                                        static_cast<uint8_t*>(y));
      break;
    case 2:
      where_kernel<uint16_t><<<g, kThreads, 0, stream>>>(s, n, c, static_cast<const uint16_t*>(a),
                                                         static_cast<const uint16_t*>(b),
                                                         static_cast<uint16_t*>(y));
      break;
    case 4:
      where_kernel<uint32_t><<<g, kThreads, 0, stream>>>(s, n, c, static_cast<const uint32_t*>(a),
                                                         static_cast<const uint32_t*>(b),
                                                         static_cast<uint32_t*>(y));
      break;
    default:
      where_kernel<uint64_t><<<g, kThreads, 0, stream>>>(s, n, c, static_cast<const uint64_t*>(a),
                                                         static_cast<const uint64_t*>(b),
                                                         static_cast<uint64_t*>(y));
      break;
  }
  check_launch("where");
}

void launch_broadcast_scale(const Strided& s, const float* x, float scale, float* y,
                            cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  broadcast_scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, n, x, scale, y);
  check_launch("broadcast_scale");
}

void launch_strided_copy(const Strided& s, const void* x, int64_t x_offset, void* y,
                         int64_t y_offset, int elem, cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  switch (elem) {
    case 1:
      strided_copy_kernel<uint8_t><<<g, kThreads, 0, stream>>>(
          s, n, static_cast<const uint8_t*>(x) + x_offset, static_cast<uint8_t*>(y) + y_offset);
      break;
    case 2:
      strided_copy_kernel<uint16_t><<<g, kThreads, 0, stream>>>(
          s, n, static_cast<const uint16_t*>(x) + x_offset, static_cast<uint16_t*>(y) + y_offset);
      break;
    case 4:
      strided_copy_kernel<uint32_t><<<g, kThreads, 0, stream>>>(
          s, n, static_cast<const uint32_t*>(x) + x_offset, static_cast<uint32_t*>(y) + y_offset);
      break;
    default:
      strided_copy_kernel<uint64_t><<<g, kThreads, 0, stream>>>(
          s, n, static_cast<const uint64_t*>(x) + x_offset, static_cast<uint64_t*>(y) + y_offset);
      break;
  }
  check_launch("strided_copy");
}

void launch_unary_grad(kernels::UnaryOp op, kernels::UnaryParams p, const Strided& s,
                       const float* dy, const float* x, const float* y, float* dx,
                       cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  unary_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, p, s, n, dy, x, y, dx);
  check_launch("unary_grad");
}

void launch_pow_grad(const Strided& s, const float* dy, const float* x, const void* e, int e_type,
                     float* dx, cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  pow_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, n, dy, x, e, e_type, dx);
  check_launch("pow_grad");
}

void launch_clip_grad(const Strided& s, const float* dy, const float* x, const float* y, float* dx,
                      kernels::ClipBounds bounds, cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  clip_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, n, dy, x, y, dx, bounds);
  check_launch("clip_grad");
}

void launch_div_grad_b(const Strided& s, const float* dy, const float* y, const float* b,
                       float* out, cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  div_grad_b_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, n, dy, y, b, out);
  check_launch("div_grad_b");
}

void launch_where_grad(const Strided& s, const bool* c, const float* dy, bool branch1, float* out,
                       cudaStream_t stream) {
  const int64_t n = total_of(s);
  if (n == 0) return;
  where_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, n, c, dy, branch1, out);
  check_launch("where_grad");
}

void launch_fold(int dtype, void* acc, const void* v, int64_t n, int op, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned g = blocks_for(n);
  switch (dtype) {
    case 1:
      fold_kernel<float><<<g, kThreads, 0, stream>>>(static_cast<float*>(acc),
                                                     static_cast<const float*>(v), n, op);
      break;
    case 2:
      fold_kernel<uint8_t><<<g, kThreads, 0, stream>>>(static_cast<uint8_t*>(acc),
                                                       static_cast<const uint8_t*>(v), n, op);
      break;
    case 6:
      fold_kernel<int32_t><<<g, kThreads, 0, stream>>>(static_cast<int32_t*>(acc),
                                                       static_cast<const int32_t*>(v), n, op);
      break;
    default:
      fold_kernel<int64_t><<<g, kThreads, 0, stream>>>(static_cast<int64_t*>(acc),
                                                       static_cast<const int64_t*>(v), n, op);
      break;
  }
  check_launch("fold");
}

void launch_fill_bool(bool* y, int64_t n, bool value, cudaStream_t stream) {
  if (n == 0) return;
  fill_bool_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, n, value);
  check_launch("fill_bool");
}

void launch_scale(float* y, int64_t n, float s, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, n, s);
  check_launch("scale");
}

void launch_add_channel_bias(float* y, const float* b, int64_t outer, int64_t c, int64_t inner,
                             cudaStream_t stream) {
  const int64_t n = outer * c * inner;
  if (n == 0) return;
  channel_bias_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, b, n, c, inner);
  check_launch("channel_bias");
}

void launch_sgd(const float* p, const float* g, float* out, int64_t n, float lr, float gs,
                cudaStream_t stream) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, g, out, n, lr, gs);
  check_launch("sgd");
}

void launch_momentum(const float* p, const float* g, const float* v, float* po, float* vo,
                     int64_t n, float lr, float mu, float gs, cudaStream_t stream) {
  if (n == 0) return;
  momentum_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, g, v, po, vo, n, lr, mu, gs);
  check_launch("momentum");
}

void launch_adam(const float* p, const float* g, const float* m, const float* v, float* po,
                 float* mo, float* vo, int64_t n, double lr, double b1, double b2, double eps,
                 double c1, double c2, double gs, cudaStream_t stream) {
  if (n == 0) return;
  adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, g, m, v, po, mo, vo, n, lr, b1, b2, eps,
                                                      c1, c2, gs);
  check_launch("adam");
}

}  // namespace planner::rt::cuda
