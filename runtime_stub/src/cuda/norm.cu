// The cuda backend's reductions and normalisations: one block per output element (or row, or
// channel); each thread folds a strided share of the elements in double, then a fixed shared-
// memory tree combines the threads, so results do not depend on scheduling.
#include <algorithm>
#include <cstdint>

#include "device_kernels.h"

namespace planner::rt::cuda {

namespace {

constexpr int kThreads = 256;  // a power of two: the tree below halves it

unsigned grid_for(int64_t blocks) {
  if (blocks < 1) blocks = 1;
  if (blocks > 65535 * 16) blocks = 65535 * 16;  // block-stride loops cover the rest
  return static_cast<unsigned>(blocks);
}

#define BLOCK_STRIDE(o, n) for (int64_t o = blockIdx.x; o < (n); o += gridDim.x)

enum class Combine { kSum, kMax, kMin };

__device__ inline double combine(Combine c, double a, double b) {
  switch (c) {
    case Combine::kSum:
      return a + b;
    case Combine::kMax:
      return (isnan(b) || b > a) ? b : a;  // NaN propagates, as the cpu kernel
    case Combine::kMin:
      return (isnan(b) || b < a) ? b : a;
  }
  return a;
}

// Combines every thread's `v` in a fixed tree; all threads get the result. `shared` holds
// kThreads doubles. Ends with a barrier, so the caller may reuse `shared` afterwards.
__device__ double block_reduce(Combine c, double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half)
      shared[threadIdx.x] = combine(c, shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  const double r = shared[0];
  __syncthreads();
  return r;
}

__device__ inline int64_t unravel(const int64_t* shape, const int64_t* strides, int rank,
                                  int64_t i) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return off;
}

__global__ void reduce_kernel(ReduceKind kind, ReduceGeom g, const float* x, float* y) {
  __shared__ double shared[kThreads];
  const Combine c = kind == ReduceKind::kMax   ? Combine::kMax
                    : kind == ReduceKind::kMin ? Combine::kMin
                                               : Combine::kSum;
  const double init = kind == ReduceKind::kMax   ? -INFINITY
                      : kind == ReduceKind::kMin ? INFINITY
                                                 : 0.0;
  BLOCK_STRIDE(o, g.n_out) {
    const int64_t base = unravel(g.kept_shape, g.kept_strides, g.kept_rank, o);
    double acc = init;
    for (int64_t r = threadIdx.x; r < g.n_red; r += kThreads)
      acc = combine(c, acc, x[base + unravel(g.red_shape, g.red_strides, g.red_rank, r)]);
    acc = block_reduce(c, acc, shared);
    if (threadIdx.x == 0) {
      if (kind == ReduceKind::kMean) acc /= static_cast<double>(g.n_red > 0 ? g.n_red : 1);
      y[o] = static_cast<float>(acc);
    }
  }
}

// Softmax rows: element k of row (o, in) at o*extent*inner + k*inner + in.
__global__ void softmax_kernel(bool log, const float* x, float* y, int64_t outer, int64_t extent,
                               int64_t inner) {
  __shared__ double shared[kThreads];
  BLOCK_STRIDE(row, outer * inner) {
    const int64_t base = (row / inner) * extent * inner + row % inner;
    double m = -INFINITY;
    for (int64_t k = threadIdx.x; k < extent; k += kThreads) {
      const double v = x[base + k * inner];
      m = v > m ? v : m;  // std::max on floats, as the cpu kernel
    }
    m = block_reduce(Combine::kMax, m, shared);
    const float mf = static_cast<float>(m);
    double sum = 0;
    for (int64_t k = threadIdx.x; k < extent; k += kThreads)
      sum += exp(static_cast<double>(x[base + k * inner]) - mf);
    sum = block_reduce(Combine::kSum, sum, shared);
    const double lse = ::log(sum);
    for (int64_t k = threadIdx.x; k < extent; k += kThreads) {
      const double z = static_cast<double>(x[base + k * inner]) - mf;
      y[base + k * inner] = static_cast<float>(log ? z - lse : exp(z - lse));
    }
  }
}

__global__ void softmax_grad_kernel(bool log, const float* dy, const float* y, float* dx,
                                    int64_t outer, int64_t extent, int64_t inner) {
  __shared__ double shared[kThreads];
  BLOCK_STRIDE(row, outer * inner) {
    const int64_t base = (row / inner) * extent * inner + row % inner;
    double sum = 0;
    for (int64_t k = threadIdx.x; k < extent; k += kThreads) {
      const int64_t i = base + k * inner;
      sum += log ? static_cast<double>(dy[i]) : static_cast<double>(dy[i]) * y[i];
    }
    sum = block_reduce(Combine::kSum, sum, shared);
    for (int64_t k = threadIdx.x; k < extent; k += kThreads) {
      const int64_t i = base + k * inner;
      dx[i] = static_cast<float>(log ? dy[i] - exp(static_cast<double>(y[i])) * sum
                                     : y[i] * (dy[i] - sum));
    }
  }
}

// Mean and 1/sqrt(var + eps) of one row (two passes in double, as the cpu kernel).
__device__ void row_stats(const float* row, int64_t n, double eps, double* shared, double* mean,
                          double* rstd) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) s += row[i];
  const double mu = block_reduce(Combine::kSum, s, shared) / static_cast<double>(n);
  double v = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) v += (row[i] - mu) * (row[i] - mu);
  const double var = block_reduce(Combine::kSum, v, shared) / static_cast<double>(n);
  *mean = mu;
  *rstd = 1.0 / sqrt(var + eps);
}

__global__ void layer_norm_kernel(const float* x, const float* scale, const float* bias, float* y,
                                  float* mean_out, float* rstd_out, int64_t outer, int64_t inner,
                                  double eps) {
  __shared__ double shared[kThreads];
  BLOCK_STRIDE(o, outer) {
    const float* row = x + o * inner;
    double mu, rstd;
    row_stats(row, inner, eps, shared, &mu, &rstd);
    for (int64_t i = threadIdx.x; i < inner; i += kThreads)
      y[o * inner + i] =
          static_cast<float>((row[i] - mu) * rstd * scale[i] + (bias ? bias[i] : 0.0f));
    if (threadIdx.x == 0) {
      if (mean_out) mean_out[o] = static_cast<float>(mu);
      if (rstd_out) rstd_out[o] = static_cast<float>(rstd);
    }
  }
}

__global__ void layer_norm_grad_kernel(const float* dy, const float* x, const float* scale,
                                       float* dx, int64_t outer, int64_t inner, double eps) {
  __shared__ double shared[kThreads];
  BLOCK_STRIDE(o, outer) {
    const float* row = x + o * inner;
    const float* g = dy + o * inner;
    double mu, rstd;
    row_stats(row, inner, eps, shared, &mu, &rstd);
    double sg = 0, sgx = 0;
    for (int64_t i = threadIdx.x; i < inner; i += kThreads) {
      const double xh = (row[i] - mu) * rstd;
      const double gi = static_cast<double>(g[i]) * scale[i];
      sg += gi;
      sgx += gi * xh;
    }
    sg = block_reduce(Combine::kSum, sg, shared);
    sgx = block_reduce(Combine::kSum, sgx, shared);
    const double n = static_cast<double>(inner);
    for (int64_t i = threadIdx.x; i < inner; i += kThreads) {
      const double xh = (row[i] - mu) * rstd;
      const double gi = static_cast<double>(g[i]) * scale[i];
      dx[o * inner + i] = static_cast<float>(rstd * (gi - sg / n - xh * sgx / n));
    }
  }
}

__global__ void row_stats_kernel(const float* x, double* stats, int64_t outer, int64_t inner,
                                 double eps) {
  __shared__ double shared[kThreads];
  BLOCK_STRIDE(o, outer) {
    double mu, rstd;
    row_stats(x + o * inner, inner, eps, shared, &mu, &rstd);
    if (threadIdx.x == 0) {
      stats[2 * o] = mu;
      stats[2 * o + 1] = rstd;
    }
  }
}

// One thread per column, rows folded in order (the cpu kernel's order).
__global__ void layer_norm_param_grad_kernel(const float* dy, const float* x, const double* stats,
                                             float* dscale, float* dbias, int64_t outer,
                                             int64_t inner) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < inner;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    double ds = 0, db = 0;
    for (int64_t o = 0; o < outer; ++o) {
      const float g = dy[o * inner + i];
      if (dscale) ds += g * ((x[o * inner + i] - stats[2 * o]) * stats[2 * o + 1]);
      db += g;
    }
    if (dscale) dscale[i] = static_cast<float>(ds);
    if (dbias) dbias[i] = static_cast<float>(db);
  }
}

__global__ void batch_norm_kernel(const float* x, const float* scale, const float* bias,
                                  const float* mean, const float* var, float* y, int64_t n,
                                  int64_t c, int64_t inner, double eps) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t ch = (i / inner) % c;
    const float a = static_cast<float>(scale[ch] / sqrt(static_cast<double>(var[ch]) + eps));
    const float shift = bias[ch] - a * mean[ch];
    y[i] = a * x[i] + shift;
  }
}

__global__ void batch_norm_grad_kernel(const float* dy, const float* scale, const float* var,
                                       float* dx, int64_t n, int64_t c, int64_t inner, double eps) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t ch = (i / inner) % c;
    const double a = scale[ch] / sqrt(static_cast<double>(var[ch]) + eps);
    dx[i] = static_cast<float>(dy[i] * a);
  }
}

__global__ void batch_norm_param_grad_kernel(const float* dy, const float* x, const float* mean,
                                             const float* var, float* dscale, float* dbias,
                                             int64_t outer, int64_t c, int64_t inner, double eps) {
  __shared__ double shared[kThreads];
  BLOCK_STRIDE(ch, c) {
    double ds = 0, db = 0;
    const int64_t count = outer * inner;
    for (int64_t k = threadIdx.x; k < count; k += kThreads) {
      const int64_t i = ((k / inner) * c + ch) * inner + k % inner;
      ds += static_cast<double>(dy[i]) * (x[i] - mean[ch]);
      db += dy[i];
    }
    ds = block_reduce(Combine::kSum, ds, shared);
    db = block_reduce(Combine::kSum, db, shared);
    if (threadIdx.x == 0) {
      if (dscale) dscale[ch] = static_cast<float>(ds / sqrt(static_cast<double>(var[ch]) + eps));
      if (dbias) dbias[ch] = static_cast<float>(db);
    }
  }
}

// Training-mode batch norm: the per-channel reductions fold in double like the cpu kernels.
__global__ void batch_norm_stats_kernel(const float* x, float* stats, int64_t outer, int64_t c,
                                        int64_t inner, double count) {
  __shared__ double shared[kThreads];
  BLOCK_STRIDE(ch, c) {
    double s = 0, q = 0;
    for (int64_t k = threadIdx.x; k < outer * inner; k += kThreads) {
      const double v = x[((k / inner) * c + ch) * inner + k % inner];
      s += v;
      q += v * v;
    }
    s = block_reduce(Combine::kSum, s, shared);
    q = block_reduce(Combine::kSum, q, shared);
    if (threadIdx.x == 0) {
      stats[ch] = static_cast<float>(s / count);
      stats[c + ch] = static_cast<float>(q / count);
    }
  }
}

__global__ void batch_norm_train_kernel(const float* x, const float* scale, const float* bias,
                                        const float* stats, float* y, int64_t n, int64_t c,
                                        int64_t inner, double eps) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t ch = (i / inner) % c;
    const kernels::ChannelStats s = kernels::channel_stats(stats[ch], stats[c + ch], eps);
    y[i] = kernels::batch_norm_train_value(x[i], s, scale[ch], bias[ch]);
  }
}

__global__ void batch_norm_train_param_grad_kernel(const float* dy, const float* x,
                                                   const float* stats, float* dscale, float* dbias,
                                                   int64_t outer, int64_t c, int64_t inner,
                                                   double eps) {
  __shared__ double shared[kThreads];
  BLOCK_STRIDE(ch, c) {
    const kernels::ChannelStats s = kernels::channel_stats(stats[ch], stats[c + ch], eps);
    double ds = 0, db = 0;
    for (int64_t k = threadIdx.x; k < outer * inner; k += kThreads) {
      const int64_t i = ((k / inner) * c + ch) * inner + k % inner;
      ds += static_cast<double>(dy[i]) * ((x[i] - s.mean) * s.inv_std);
      db += dy[i];
    }
    ds = block_reduce(Combine::kSum, ds, shared);
    db = block_reduce(Combine::kSum, db, shared);
    if (threadIdx.x == 0) {
      if (dscale) dscale[ch] = static_cast<float>(ds);
      if (dbias) dbias[ch] = static_cast<float>(db);
    }
  }
}

__global__ void batch_norm_train_grad_kernel(const float* dy, const float* x, const float* scale,
                                             const float* stats, const float* dscale,
                                             const float* dbias, float* dx, int64_t n, int64_t c,
                                             int64_t inner, double eps, double count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t ch = (i / inner) % c;
    const kernels::ChannelStats s = kernels::channel_stats(stats[ch], stats[c + ch], eps);
    dx[i] = kernels::batch_norm_train_grad_value(dy[i], x[i], s, scale[ch], dscale[ch], dbias[ch],
                                                 count);
  }
}

unsigned elementwise_grid(int64_t n) {
  return grid_for((n + kThreads - 1) / kThreads);
}

}  // namespace

void launch_reduce(ReduceKind kind, const ReduceGeom& g, const float* x, float* y,
                   cudaStream_t stream) {
  if (g.n_out == 0) return;
  reduce_kernel<<<grid_for(g.n_out), kThreads, 0, stream>>>(kind, g, x, y);
  check_launch("reduce");
}

void launch_softmax(bool log, const float* x, float* y, int64_t outer, int64_t extent,
                    int64_t inner, cudaStream_t stream) {
  if (outer * inner == 0 || extent == 0) return;
  softmax_kernel<<<grid_for(outer * inner), kThreads, 0, stream>>>(log, x, y, outer, extent, inner);
  check_launch("softmax");
}

void launch_softmax_grad(bool log, const float* dy, const float* y, float* dx, int64_t outer,
                         int64_t extent, int64_t inner, cudaStream_t stream) {
  if (outer * inner == 0 || extent == 0) return;
  softmax_grad_kernel<<<grid_for(outer * inner), kThreads, 0, stream>>>(log, dy, y, dx, outer,
                                                                        extent, inner);
  check_launch("softmax_grad");
}

void launch_layer_norm(const float* x, const float* scale, const float* bias, float* y, float* mean,
                       float* rstd, int64_t outer, int64_t inner, double eps, cudaStream_t stream) {
  if (outer == 0) return;
  layer_norm_kernel<<<grid_for(outer), kThreads, 0, stream>>>(x, scale, bias, y, mean, rstd, outer,
                                                              inner, eps);
  check_launch("layer_norm");
}

void launch_layer_norm_grad(const float* dy, const float* x, const float* scale, float* dx,
                            int64_t outer, int64_t inner, double eps, cudaStream_t stream) {
  if (outer == 0) return;
  layer_norm_grad_kernel<<<grid_for(outer), kThreads, 0, stream>>>(dy, x, scale, dx, outer, inner,
                                                                   eps);
  check_launch("layer_norm_grad");
}

void launch_layer_norm_param_grad(const float* dy, const float* x, float* dscale, float* dbias,
                                  double* stats, int64_t outer, int64_t inner, double eps,
                                  cudaStream_t stream) {
  if (inner == 0) return;
  if (dscale && outer > 0) {
    row_stats_kernel<<<grid_for(outer), kThreads, 0, stream>>>(x, stats, outer, inner, eps);
    check_launch("row_stats");
  }
  layer_norm_param_grad_kernel<<<elementwise_grid(inner), kThreads, 0, stream>>>(
      dy, x, stats, dscale, dbias, outer, inner);
  check_launch("layer_norm_param_grad");
}

void launch_batch_norm(const float* x, const float* scale, const float* bias, const float* mean,
                       const float* var, float* y, int64_t outer, int64_t c, int64_t inner,
                       double eps, cudaStream_t stream) {
  const int64_t n = outer * c * inner;
  if (n == 0) return;
  batch_norm_kernel<<<elementwise_grid(n), kThreads, 0, stream>>>(x, scale, bias, mean, var, y, n,
                                                                  c, inner, eps);
  check_launch("batch_norm");
}

void launch_batch_norm_grad(const float* dy, const float* scale, const float* var, float* dx,
                            int64_t outer, int64_t c, int64_t inner, double eps,
                            cudaStream_t stream) {
  const int64_t n = outer * c * inner;
  if (n == 0) return;
  batch_norm_grad_kernel<<<elementwise_grid(n), kThreads, 0, stream>>>(dy, scale, var, dx, n, c,
                                                                       inner, eps);
  check_launch("batch_norm_grad");
}

void launch_batch_norm_param_grad(const float* dy, const float* x, const float* mean,
                                  const float* var, float* dscale, float* dbias, int64_t outer,
                                  int64_t c, int64_t inner, double eps, cudaStream_t stream) {
  if (c == 0) return;
  batch_norm_param_grad_kernel<<<grid_for(c), kThreads, 0, stream>>>(dy, x, mean, var, dscale,
                                                                     dbias, outer, c, inner, eps);
  check_launch("batch_norm_param_grad");
}

void launch_batch_norm_stats(const float* x, float* stats, int64_t outer, int64_t c, int64_t inner,
                             double count, cudaStream_t stream) {
  if (c == 0) return;
  batch_norm_stats_kernel<<<grid_for(c), kThreads, 0, stream>>>(x, stats, outer, c, inner, count);
  check_launch("batch_norm_stats");
}

void launch_batch_norm_train(const float* x, const float* scale, const float* bias,
                             const float* stats, float* y, int64_t outer, int64_t c, int64_t inner,
                             double eps, cudaStream_t stream) {
  const int64_t n = outer * c * inner;
  if (n == 0) return;
  batch_norm_train_kernel<<<elementwise_grid(n), kThreads, 0, stream>>>(x, scale, bias, stats, y, n,
                                                                        c, inner, eps);
  check_launch("batch_norm_train");
}

void launch_batch_norm_train_param_grad(const float* dy, const float* x, const float* stats,
                                        float* dscale, float* dbias, int64_t outer, int64_t c,
                                        int64_t inner, double eps, cudaStream_t stream) {
  if (c == 0) return;
  batch_norm_train_param_grad_kernel<<<grid_for(c), kThreads, 0, stream>>>(
      dy, x, stats, dscale, dbias, outer, c, inner, eps);
  check_launch("batch_norm_train_param_grad");
}

void launch_batch_norm_train_grad(const float* dy, const float* x, const float* scale,
                                  const float* stats, const float* dscale, const float* dbias,
                                  float* dx, int64_t outer, int64_t c, int64_t inner, double eps,
                                  double count, cudaStream_t stream) {
  const int64_t n = outer * c * inner;
  if (n == 0) return;
  batch_norm_train_grad_kernel<<<elementwise_grid(n), kThreads, 0, stream>>>(
      dy, x, scale, stats, dscale, dbias, dx, n, c, inner, eps, count);
  check_launch("batch_norm_train_grad");
}

namespace {

__global__ void running_stats_kernel(const float* stats, const float* mean, const float* var,
                                     float* o0, float* o1, float* o2, float* o3, int64_t c,
                                     double momentum) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < 4 * c;
       t += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int k = static_cast<int>(t / c);
    const int64_t ch = t % c;
    float* out = k == 0 ? o0 : k == 1 ? o1 : k == 2 ? o2 : o3;
    if (out)
      out[ch] = kernels::running_stat(k, stats[ch], stats[c + ch], mean[ch], var[ch], momentum);
  }
}

}  // namespace

void launch_batch_norm_running_stats(const float* stats, const float* mean, const float* var,
                                     float* const out[4], int64_t c, double momentum,
                                     cudaStream_t stream) {
  if (c == 0) return;
  const int64_t n = 4 * c;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 65535));
  running_stats_kernel<<<blocks, 256, 0, stream>>>(stats, mean, var, out[0], out[1], out[2], out[3],
                                                   c, momentum);
  check_launch("batch_norm_running_stats");
}

}  // namespace planner::rt::cuda
