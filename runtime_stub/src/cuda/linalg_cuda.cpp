// MatMul (batched, broadcasting) and Gemm on cuBLAS, with the cpu kernels' shape rules. The
// operands are f32, or both f16 or both bf16 (the precision boundary casts mixed-precision
// operands); the result is always f32, accumulated in f32 (CUBLAS_COMPUTE_32F).
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"
#include "planner_rt/precision.h"

namespace planner::rt::kernels {

namespace {

int to_int(const KernelContext& ctx, int64_t v) {
  if (v > INT32_MAX) ctx.fail("matrix too large for 32-bit cuBLAS");
  return static_cast<int>(std::max<int64_t>(v, 1));
}

// The cuBLAS type of the operands: f32, f16 or bf16 (both operands the same).
cudaDataType_t operand_type(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype)
    ctx.fail("A is " + std::string(dtype_name(a.dtype)) + ", B " +
             std::string(dtype_name(b.dtype)) + ": cuBLAS takes operands of one type");
  switch (a.dtype) {
    case DType::kFloat32:
      return CUDA_R_32F;
    case DType::kFloat16:
      return CUDA_R_16F;
    case DType::kBFloat16:
      return CUDA_R_16BF;
    default:
      ctx.fail("unsupported operand type " + std::string(dtype_name(a.dtype)));
  }
}

// The math mode of a call: plain f32 FMA (comparable with the cpu backend) unless TF32 is on;
// 16-bit operands on tensor cores with f32 reductions.
cublasMath_t math_mode(cudaDataType_t type) {
  if (type != CUDA_R_32F)
    return static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                     CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  return tf32_enabled() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH;
}

// Row-major C = alpha op(A) op(B) + beta C (m x n, inner k) as cuBLAS's column-major
// C^T = op(B)^T op(A)^T, `batch` times with element strides sa, sb, sc (0: shared). A and B
// are of `type`, C is f32; element strides and offsets count elements.
void gemm_rm(const KernelContext& ctx, cudaDataType_t type, bool ta, bool tb, int64_t m, int64_t n,
             int64_t k, float alpha, const void* a, int64_t lda, int64_t sa, const void* b,
             int64_t ldb, int64_t sb, float beta, float* c, int64_t ldc, int64_t sc,
             int64_t batch) {
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
  const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                          opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  PLANNER_CUDA_CHECK(cublasSetMathMode(cx.cublas, math_mode(type)));
  PLANNER_CUDA_CHECK(cublasGemmStridedBatchedEx(
      cx.cublas, opb, opa, to_int(ctx, n), to_int(ctx, m), to_int(ctx, k), &alpha, b, type,
      to_int(ctx, ldb), sb, a, type, to_int(ctx, lda), sa, &beta, c, CUDA_R_32F, to_int(ctx, ldc),
      sc, to_int(ctx, batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Element `offset` of a device array of `type`.
const void* at(const void* p, cudaDataType_t type, int64_t offset) {
  return static_cast<const char*>(p) + offset * (type == CUDA_R_32F ? 4 : 2);
}

}  // namespace

void gemm_f32(const KernelContext& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
              float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
              float* c, int64_t ldc) {
  gemm_rm(ctx, CUDA_R_32F, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

void c_matmul(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  const cudaDataType_t type = operand_type(ctx, a, b);
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
  const void* ap = a.data;
  const void* bp = b.data;
  float* yp = ctx.out(0).as<float>();
  const int64_t nb = num_elements(batch), na = num_elements(ba), nbb = num_elements(bb);
  if (nbb == 1 && na == nb) {  // B shared by every batch: one GEMM over all rows of A
    gemm_rm(ctx, type, false, false, nb * m, n, k, 1.0f, ap, k, 0, bp, n, 0, 0.0f, yp, n, 0, 1);
    return;
  }
  if ((na == nb || na == 1) && (nbb == nb || nbb == 1)) {  // one strided-batched call
    gemm_rm(ctx, type, false, false, m, n, k, 1.0f, ap, k, na == 1 ? 0 : m * k, bp, n,
            nbb == 1 ? 0 : k * n, 0.0f, yp, n, m * n, nb);
    return;
  }
  // General broadcasting between batch dimensions: one GEMM per output batch.
  broadcast_loop<2>(batch, {ba, bb}, [&](int64_t o, const std::array<int64_t, 2>& off) {
    gemm_rm(ctx, type, false, false, m, n, k, 1.0f, at(ap, type, off[0] * m * k), k, 0,
            at(bp, type, off[1] * k * n), n, 0, 0.0f, yp + o * m * n, n, 0, 1);
  });
}

void c_gemm(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  const cudaDataType_t type = operand_type(ctx, a, b);
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
  gemm_rm(ctx, type, ta, tb, m, n, k, alpha, a.data, a.shape[1], 0, b.data, b.shape[1], 0,
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
  gemm_rm(ctx, CUDA_R_32F, true, false, k, n, rows, 1.0f, a.as<float>(), k, 0, dy.as<float>(), n, 0,
          0.0f, ctx.out(0).as<float>(), n, 0, 1);
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
  gemm_rm(ctx, CUDA_R_32F, false, true, rows, n, k, 1.0f, a.as<float>(), k, 0, b.as<float>(), k, 0,
          0.0f, ctx.out(0).as<float>(), n, 0, 1);
}

}  // namespace planner::rt::kernels
