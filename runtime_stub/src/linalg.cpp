// MatMul (batched, numpy broadcasting, 1-D operands) and Gemm, on BLAS sgemm.
#include <algorithm>

#include "kernel_util.h"

namespace planner::rt::kernels {

void k_matmul(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  ctx.expect_dtype(a, DType::kFloat32, "A");
  ctx.expect_dtype(b, DType::kFloat32, "B");
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("operands must have rank >= 1");
  // numpy.matmul: a 1-D A gains a leading 1, a 1-D B a trailing 1, removed from the result.
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
  const int64_t nb = num_elements(batch);
  if (bb.empty() || num_elements(bb) == 1) {
    if (num_elements(ba) == nb) {
      // B shared by every batch: one GEMM over all rows of A.
      sgemm(false, false, nb * m, n, k, 1.0f, ap, k, bp, n, 0.0f, yp, n);
      return;
    }
  }
  broadcast_loop<2>(batch, {ba, bb}, [&](int64_t o, const std::array<int64_t, 2>& off) {
    sgemm(false, false, m, n, k, 1.0f, ap + off[0] * m * k, k, bp + off[1] * k * n, n, 0.0f,
          yp + o * m * n, n);
  });
}

void k_gemm(const KernelContext& ctx) {
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
    const float* cp = c.as<float>();
    broadcast_loop<1>({m, n}, {c.shape}, [&](int64_t o, const std::array<int64_t, 1>& off) {
      y[o] = beta * cp[off[0]];
    });
    gemm_beta = 1.0f;
  }
  sgemm(ta, tb, m, n, k, alpha, a.as<float>(), a.shape[1], b.as<float>(), b.shape[1], gemm_beta, y,
        n);
}

void k_matmul_trans_b(const KernelContext& ctx) {
  // (A [..., K], B [N, K]) -> Y [..., N] = A B^T over the rows (leading dims flattened).
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
  sgemm(false, true, rows, n, k, 1.0f, a.as<float>(), k, b.as<float>(), k, 0.0f,
        ctx.out(0).as<float>(), n);
}

void k_matmul_grad_weight(const KernelContext& ctx) {
  // (A [..., K], dY [..., N]) -> dW [K, N] = A^T dY over the rows (leading dims flattened).
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
  sgemm(true, false, k, n, rows, 1.0f, a.as<float>(), k, dy.as<float>(), n, 0.0f,
        ctx.out(0).as<float>(), n);
}

}  // namespace planner::rt::kernels
