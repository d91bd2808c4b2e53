// MatMul (batched, broadcasting) and Gemm on cuBLAS, with the cpu kernels' shape rules.
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"

namespace planner::rt::kernels {

namespace {

int to_int(const KernelContext& ctx, int64_t v) {
  if (v > INT32_MAX) ctx.fail("matrix too large for 32-bit cuBLAS");
  return static_cast<int>(std::max<int64_t>(v, 1));
}

// Row-major C = alpha op(A) op(B) + beta C (m x n, inner k) as cuBLAS's column-major
// C^T = op(B)^T op(A)^T, `batch` times with element strides sa, sb, sc (0: shared).
void gemm_rm(const KernelContext& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
             float alpha, const float* a, int64_t lda, int64_t sa, const float* b, int64_t ldb,
             int64_t sb, float beta, float* c, int64_t ldc, int64_t sc, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  cuda::Context& cx = cuda::context();
  if (k == 0) {
    // cuBLAS with k = 0 scales C by beta; beta is 0 or 1 here: clear or keep.
    if (beta == 0.0f)
      for (int64_t i = 0; i < batch; ++i)
        PLANNER_CUDA_CHECK(cudaMemset2DAsync(c + i * sc, static_cast<size_t>(ldc) * 4, 0,
                                             static_cast<size_t>(n) * 4, static_cast<size_t>(m),
                                             cx.stream));
    return;
  }
  const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  PLANNER_CUDA_CHECK(cublasSgemmStridedBatched(
      cx.cublas, opb, opa, to_int(ctx, n), to_int(ctx, m), to_int(ctx, k), &alpha, b,
      to_int(ctx, ldb), sb, a, to_int(ctx, lda), sa, &beta, c, to_int(ctx, ldc), sc,
      to_int(ctx, batch)));
}

}  // namespace

void c_matmul(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  ctx.expect_dtype(a, DType::kFloat32, "A");
  ctx.expect_dtype(b, DType::kFloat32, "B");
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("operands must have rank >= 1");
  Shape sa = a.shape, sb = b.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    ctx.fail("inner dimensions differ: A " + shape_to_string(a.shape) + ", B " +
             shape_to_string(b.shape));
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch = ctx.broadcast({ba, bb});
  Shape out = batch;
  if (a.rank() > 1) out.push_back(m);
  if (b.rank() > 1) out.push_back(n);
  ctx.expect_out(0, DType::kFloat32, out);
  const float* ap = a.as<float>();
  const float* bp = b.as<float>();
  float* yp = ctx.out(0).as<float>();
  const int64_t nb = num_elements(batch), na = num_elements(ba), nbb = num_elements(bb);
  if (nbb == 1 && na == nb) {  // B shared by every batch: one GEMM over all rows of A
    gemm_rm(ctx, false, false, nb * m, n, k, 1.0f, ap, k, 0, bp, n, 0, 0.0f, yp, n, 0, 1);
    return;
  }
  if ((na == nb || na == 1) && (nbb == nb || nbb == 1)) {  // one strided-batched call
    gemm_rm(ctx, false, false, m, n, k, 1.0f, ap, k, na == 1 ? 0 : m * k, bp, n,
            nbb == 1 ? 0 : k * n, 0.0f, yp, n, m * n, nb);
    return;
  }
  // General broadcasting between batch dimensions: one GEMM per output batch.
  broadcast_loop<2>(batch, {ba, bb}, [&](int64_t o, const std::array<int64_t, 2>& off) {
    gemm_rm(ctx, false, false, m, n, k, 1.0f, ap + off[0] * m * k, k, 0, bp + off[1] * k * n, n, 0,
            0.0f, yp + o * m * n, n, 0, 1);
  });
}

void c_gemm(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  ctx.expect_dtype(a, DType::kFloat32, "A");
  ctx.expect_dtype(b, DType::kFloat32, "B");
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("A " + shape_to_string(a.shape) + " and B " + shape_to_string(b.shape) +
             " must be 2-D");
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const float alpha = static_cast<float>(ctx.attr_float("alpha", 1.0));
  const float beta = static_cast<float>(ctx.attr_float("beta", 1.0));
  const int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (k != kb)
    ctx.fail("inner dimensions differ: A " + shape_to_string(a.shape) + ", B " +
             shape_to_string(b.shape) + (ta ? " (transA)" : "") + (tb ? " (transB)" : ""));
  ctx.expect_out(0, DType::kFloat32, {m, n});
  float* y = ctx.out(0).as<float>();
  float gemm_beta = 0.0f;
  if (ctx.has_in(2) && beta != 0.0f) {
    const Tensor& c = ctx.in(2);
    ctx.expect_dtype(c, DType::kFloat32, "C");
    if (c.rank() > 2 || ctx.broadcast({c.shape, {m, n}}) != Shape{m, n})
      ctx.fail("C " + shape_to_string(c.shape) + " does not broadcast to " +
               shape_to_string({m, n}));
    // y = beta * C broadcast to [m, n], then the GEMM adds alpha op(A) op(B).
    cuda::Strided s;
    s.rank = 2;
    s.shape[0] = m;
    s.shape[1] = n;
    const std::vector<int64_t> st = broadcast_strides(c.shape, {m, n});
    s.strides[0][0] = st[0];
    s.strides[0][1] = st[1];
    cuda::launch_broadcast_scale(s, c.as<float>(), beta, y, cuda::context().stream);
    gemm_beta = 1.0f;
  }
  gemm_rm(ctx, ta, tb, m, n, k, alpha, a.as<float>(), a.shape[1], 0, b.as<float>(), b.shape[1], 0,
          gemm_beta, y, n, 0, 1);
}

void c_matmul_grad_weight(const KernelContext& ctx) {
  ctx.expect_arity(2, 1, "(A, dY) -> dW");
  const Tensor& a = ctx.in(0);
  const Tensor& dy = ctx.in(1);
  ctx.expect_dtype(a, DType::kFloat32, "A");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  if (a.rank() < 2 || a.rank() != dy.rank() ||
      !std::equal(a.shape.begin(), a.shape.end() - 1, dy.shape.begin()))
    ctx.fail("A " + shape_to_string(a.shape) + " and dY " + shape_to_string(dy.shape) +
             " must share their leading dimensions");
  const int64_t k = a.shape.back(), n = dy.shape.back(), rows = k == 0 ? 0 : a.numel() / k;
  ctx.expect_out(0, DType::kFloat32, {k, n});
  gemm_rm(ctx, true, false, k, n, rows, 1.0f, a.as<float>(), k, 0, dy.as<float>(), n, 0, 0.0f,
          ctx.out(0).as<float>(), n, 0, 1);
}

void c_matmul_trans_b(const KernelContext& ctx) {
  ctx.expect_arity(2, 1, "(A, B) -> Y");
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  ctx.expect_dtype(a, DType::kFloat32, "A");
  ctx.expect_dtype(b, DType::kFloat32, "B");
  if (a.rank() < 1 || b.rank() != 2 || a.shape.back() != b.shape[1])
    ctx.fail("A " + shape_to_string(a.shape) + " and B " + shape_to_string(b.shape) +
             " do not multiply as A B^T");
  const int64_t k = b.shape[1], n = b.shape[0], rows = k == 0 ? 0 : a.numel() / k;
  Shape out = a.shape;
  out.back() = n;
  ctx.expect_out(0, DType::kFloat32, out);
  gemm_rm(ctx, false, true, rows, n, k, 1.0f, a.as<float>(), k, 0, b.as<float>(), k, 0, 0.0f,
          ctx.out(0).as<float>(), n, 0, 1);
}

}  // namespace planner::rt::kernels
