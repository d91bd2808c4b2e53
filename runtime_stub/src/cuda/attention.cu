// ai.planner.Attention and AttentionGrad on the device: attention_math.h's row bodies (the cpu
// kernels run the same), one thread per query row (LSE and Y; Δ; dQ) or key row (dK and dV),
// each keeping kAttentionChunk columns of its accumulators in double and re-reading the scores
// for the next chunk. Every row sums its terms in the cpu's order, so the two backends agree to
// the rounding of the math library's exp and log (and the compilers' contractions).
#include <cstdint>

#include "device_kernels.h"
#include "launch_util.cuh"

namespace planner::rt::cuda {

namespace {

using kernels::AttentionDims;
using kernels::AttentionTensors;
using kernels::kAttentionChunk;

__global__ void attention_forward_kernel(AttentionTensors p, AttentionDims a, int64_t rows) {
  double acc[kAttentionChunk];
  GRID_STRIDE(row, rows) {
    kernels::attention_forward_row(p, a, row, acc, kAttentionChunk);
  }
}

__global__ void attention_delta_kernel(AttentionTensors p, AttentionDims a, int64_t rows) {
  GRID_STRIDE(row, rows) {
    kernels::attention_delta_row(p, a, row);
  }
}

__global__ void attention_grad_q_kernel(AttentionTensors p, AttentionDims a, int64_t rows) {
  double acc[kAttentionChunk];
  GRID_STRIDE(row, rows) {
    kernels::attention_grad_q_row(p, a, row, acc, kAttentionChunk);
  }
}

__global__ void attention_grad_kv_kernel(AttentionTensors p, AttentionDims a, int64_t rows) {
  double acc[2 * kAttentionChunk];
  GRID_STRIDE(row, rows) {
    kernels::attention_grad_kv_row(p, a, row, acc, kAttentionChunk);
  }
}

}  // namespace

void launch_attention(const AttentionTensors& p, const AttentionDims& a, cudaStream_t stream) {
  const int64_t rows = a.batch * a.s;
  if (rows == 0 || (!p.out_y && !p.out_lse)) return;
  attention_forward_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(p, a, rows);
  check_launch("attention");
}

void launch_attention_grad(const AttentionTensors& p, const AttentionDims& a, cudaStream_t stream) {
  const int64_t q_rows = a.batch * a.s, k_rows = a.batch * a.t;
  if ((p.dq || p.dk) && q_rows > 0) {
    attention_delta_kernel<<<blocks_for(q_rows), kThreads, 0, stream>>>(p, a, q_rows);
    check_launch("attention_delta");
  }
  if (p.dq && q_rows > 0) {
    attention_grad_q_kernel<<<blocks_for(q_rows), kThreads, 0, stream>>>(p, a, q_rows);
    check_launch("attention_grad_q");
  }
  if ((p.dk || p.dv) && k_rows > 0) {
    attention_grad_kv_kernel<<<blocks_for(k_rows), kThreads, 0, stream>>>(p, a, k_rows);
    check_launch("attention_grad_kv");
  }
}

}  // namespace planner::rt::cuda
