// Launchers of the cuda backend's own kernels (elementwise.cu, norm.cu): plain types only, so
// the .cu files need no planner headers beyond unary_math.h. Each queues work on `stream` and
// throws Error if the launch fails. Shapes arrive as Strided descriptors of at most kMaxDims
// dimensions, built on the host from the cpu kernels' stride helpers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../attention_math.h"
#include "../copy_math.h"
#include "../loss_math.h"
#include "../pool_math.h"
#include "../resize_math.h"
#include "../rnn_math.h"
#include "../train_math.h"
#include "../unary_math.h"

namespace planner::rt::cuda {

inline constexpr int kMaxDims = 8;
inline constexpr int kMaxOperands = 4;

/// An output shape and, per operand, its element strides as read broadcast to that shape
/// (0 along broadcast dimensions).
struct Strided {
  int rank = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
};

/// Throws Error "launching kernel <name>: <error>" if the last launch failed (backend_cuda.cpp).
void check_launch(const char* name);

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };
enum class CompareOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kAnd, kOr, kXor };
enum class ReduceKind { kSum, kMean, kMax, kMin };

// ---- elementwise.cu ------------------------------------------------------------------------
/// y[i] = f(x[i]) for n floats.
void launch_unary(kernels::UnaryOp op, kernels::UnaryParams p, const float* x, float* y, int64_t n,
                  cudaStream_t stream);
/// y = min(max(x, lo), hi).
void launch_clip(const float* x, float* y, int64_t n, float lo, float hi, cudaStream_t stream);
/// y = a op b over `s` (operands 0 = a, 1 = b); float.
void launch_binary(BinaryOp op, const Strided& s, const float* a, const float* b, float* y,
                   cudaStream_t stream);
/// y = a ^ b with an integer exponent b (i64 when b_is_i64, else i32), computed in double.
void launch_pow_int(const Strided& s, const float* a, const void* b, bool b_is_i64, float* y,
                    cudaStream_t stream);
/// y (bool) = a cmp b over `s`; `elem` is 4 (float) or 1 (bool, for And/Or/Xor/Equal).
void launch_compare(CompareOp op, const Strided& s, const void* a, const void* b, bool is_float,
                    bool* y, cudaStream_t stream);
/// y = !x (bool).
void launch_not(const bool* x, bool* y, int64_t n, cudaStream_t stream);
/// y = c ? a : b over `s` (operands c, a, b), elements of `elem` bytes (1, 2, 4 or 8).
void launch_where(const Strided& s, const bool* c, const void* a, const void* b, void* y, int elem,
                  cudaStream_t stream);
/// y = x * scale over `s` (operand 0 = x): broadcasting copy with a scale; float.
void launch_broadcast_scale(const Strided& s, const float* x, float scale, float* y,
                            cudaStream_t stream);
/// A strided copy of `elem`-byte elements (1, 2, 4 or 8) over the index space s.shape:
/// y[y_offset + offset under s.strides[1]] = x[x_offset + offset under s.strides[0]]
/// (Transpose, broadcast copies, the boxes collectives move). Offsets are in elements.
void launch_strided_copy(const Strided& s, const void* x, int64_t x_offset, void* y,
                         int64_t y_offset, int elem, cudaStream_t stream);
/// UnaryGrad: dx = dy * f'(x, y) over `s` (operands x, y; dy and dx have the output shape).
void launch_unary_grad(kernels::UnaryOp op, kernels::UnaryParams p, const Strided& s,
                       const float* dy, const float* x, const float* y, float* dx,
                       cudaStream_t stream);
/// UnaryGrad op=Pow: dx = dy * e * x^(e-1) (0 where e = 0), operands x, e; e's type by
/// e_type (0 f32, 1 i32, 2 i64).
void launch_pow_grad(const Strided& s, const float* dy, const float* x, const void* e, int e_type,
                     float* dx, cudaStream_t stream);
/// UnaryGrad op=Clip: dx = dy where lo <= x <= hi, or where x == y without bounds (operands x,
/// y; kernels::clip_grad_element).
void launch_clip_grad(const Strided& s, const float* dy, const float* x, const float* y, float* dx,
                      kernels::ClipBounds bounds, cudaStream_t stream);
/// DivGradB: out = -dy * y / b (operands y, b).
void launch_div_grad_b(const Strided& s, const float* dy, const float* y, const float* b,
                       float* out, cudaStream_t stream);
/// WhereGrad: out = dy where c == branch1 (operand c).
void launch_where_grad(const Strided& s, const bool* c, const float* dy, bool branch1, float* out,
                       cudaStream_t stream);
/// acc = acc op v for n elements; dtype code as ONNX (1 f32, 2 u8, 6 i32, 7 i64);
/// op 0 sum, 1 max, 2 min, 3 prod (ReduceOp order).
void launch_fold(int dtype, void* acc, const void* v, int64_t n, int op, cudaStream_t stream);
/// y[i] = value for n bytes-sized elements (bool fill).
void launch_fill_bool(bool* y, int64_t n, bool value, cudaStream_t stream);
/// y = y / s for n floats (Mean's division by the input count).
void launch_scale(float* y, int64_t n, float s, cudaStream_t stream);
/// Per-channel bias: y[(o*c + ch)*inner + i] += b[ch].
void launch_add_channel_bias(float* y, const float* b, int64_t outer, int64_t c, int64_t inner,
                             cudaStream_t stream);
/// SGD: out = p - lr * g.
void launch_sgd(const float* p, const float* g, float* out, int64_t n, float lr, float gs,
                cudaStream_t stream);
/// Momentum: v' = mu v + g; p' = p - lr v'.
void launch_momentum(const float* p, const float* g, const float* v, float* po, float* vo,
                     int64_t n, float lr, float mu, float gs, cudaStream_t stream);
/// Adam with bias corrections c1 = 1 - b1^t, c2 = 1 - b2^t (double, as the cpu kernel).
void launch_adam(const float* p, const float* g, const float* m, const float* v, float* po,
                 float* mo, float* vo, int64_t n, double lr, double b1, double b2, double eps,
                 double c1, double c2, double gs, cudaStream_t stream);

// ---- shape_ops.cu (data movement; copy_plan.h plans the copies) ---------------------------
/// One strided copy of `elem`-byte elements (1, 2, 4 or 8) from x to y.
void launch_copy_plan(const kernels::StridedCopy& c, const void* x, void* y, int elem,
                      cudaStream_t stream);
/// y[i] = *value for n elements of `elem` bytes.
void launch_fill(void* y, int64_t n, const void* value, int elem, cudaStream_t stream);
/// Gather of data [outer, dim, inner] with `count` indices (i64 or i32) into y; an index out
/// of range writes zeros and sets *error (checked when the host next waits, cuda::sync).
void launch_gather(const void* x, const void* indices, bool i64, void* y, int64_t outer,
                   int64_t count, int64_t inner, int64_t dim, int elem, int* error,
                   cudaStream_t stream);
/// GatherGrad into a zero-filled dx: each (outer, inner) element adds its dY values in index
/// order (bit-identical to the cpu kernel).
void launch_gather_grad(const float* dy, const void* indices, bool i64, float* dx, int64_t outer,
                        int64_t count, int64_t inner, int64_t dim, int* error, cudaStream_t stream);
/// Pad in any mode as a gather (copy_math.h's pad_read_offset): n output elements of `elem`
/// bytes, the padding's element given by its bits.
void launch_pad_gather(const kernels::PadGeom& g, const void* x, void* y, int64_t n, int elem,
                       uint64_t fill_bits, cudaStream_t stream);
/// PadGrad in any mode: every one of dX's n elements gathers its readers (pad_grad_element).
void launch_pad_grad(const kernels::PadGeom& g, const float* dy, float* dx, int64_t n,
                     cudaStream_t stream);
/// Range: y[i] = start + i * delta; dtype 1 (f32: fstart, fdelta), 6 (i32) or 7 (i64).
void launch_range(int dtype, int64_t start, int64_t delta, float fstart, float fdelta, void* y,
                  int64_t n, cudaStream_t stream);
/// Cast between ONNX type codes the device converts exactly as the cpu kernel (integers and
/// bools to f32, i32 to i64, bools to integers); false for other pairs.
bool launch_cast(int from, int to, const void* x, void* y, int64_t n, cudaStream_t stream);

// ---- pool.cu ---------------------------------------------------------------------------------
/// PoolGrad over `planes` planes (pool_math.h); every dX element is written. The caller has
/// checked that pool_grad_element fits the geometry (kPoolMaxCandidates).
void launch_pool_grad(const kernels::PoolGeom& g, int64_t planes, const float* x, const float* dy,
                      float* dx, cudaStream_t stream);
/// GlobalPoolGrad: average writes every element; max writes each plane's first maximum into a
/// zero-filled dx.
void launch_global_pool_grad(bool max, const float* x, const float* dy, float* dx, int64_t planes,
                             int64_t in_p, cudaStream_t stream);

// ---- select.cu -------------------------------------------------------------------------------
/// ArgMax (max) / ArgMin of x ([outer, extent, inner], ONNX dtype 1, 6 or 7) into n int64s.
void launch_arg_extreme(int dtype, const void* x, int64_t* y, int64_t n, int64_t extent,
                        int64_t inner, bool max, bool last, cudaStream_t stream);
/// Trilu over n elements of `elem` bytes, matrices rows x cols.
void launch_trilu(const void* x, void* y, int64_t n, int64_t rows, int64_t cols, int64_t k,
                  bool upper, int elem, cudaStream_t stream);
/// TopK of x ([outer, extent, inner], ONNX dtype 1, 6 or 7): n slices, k values and int64
/// indices each.
void launch_topk(int dtype, const void* x, void* values, int64_t* indices, int64_t n,
                 int64_t extent, int64_t inner, int64_t k, bool largest, cudaStream_t stream);
/// TopKGrad: n slices of dx ([outer, extent, inner]) from dv and indices ([outer, k, inner]).
void launch_topk_grad(const float* dv, const int64_t* indices, float* dx, int64_t n, int64_t extent,
                      int64_t inner, int64_t k, cudaStream_t stream);
/// CumSum of x ([outer, extent, inner], ONNX dtype 1, 6 or 7): n running sums.
/// Resize of x (f32, p.in's extents) into y (p.numel_out elements): resize_math.h per element.
void launch_resize(const float* x, float* y, const kernels::ResizeParams& p, cudaStream_t stream);
/// Resize's input gradient: n elements of dx (p.in's extents) from dy (p.out's).
void launch_resize_grad(const float* dy, float* dx, int64_t n, const kernels::ResizeParams& p,
                        cudaStream_t stream);
void launch_cumsum(int dtype, const void* x, void* y, int64_t n, int64_t extent, int64_t inner,
                   bool exclusive, bool reverse, cudaStream_t stream);
/// OneHot: n output elements of `elem` bytes ([outer, depth, inner]) from indices (ONNX dtype
/// 1, 6 or 7) and the two-element values (off, on), all in device memory.
void launch_one_hot(int index_dtype, const void* indices, const void* values, void* y, int64_t n,
                    int64_t depth, int64_t inner, int elem, cudaStream_t stream);

// ---- loss.cu --------------------------------------------------------------------------------
/// GatherElements over n output elements of `elem` bytes (indices i64 or i32, in device memory).
void launch_gather_elements(const void* x, const void* indices, bool i64, void* y, int64_t n,
                            const kernels::SmallShape& idx, const kernels::SmallShape& data,
                            int axis, int elem, int* error, cudaStream_t stream);
/// GatherElementsGrad: one thread per line of dx along the axis (indices i64).
void launch_gather_elements_grad(const float* dy, const int64_t* idx, float* dx, int64_t lines,
                                 const kernels::SmallShape& ind, const kernels::SmallShape& data,
                                 int axis, int* error, cudaStream_t stream);
/// NegativeLogLikelihoodLoss of x ([n, c, inner]) with int64 targets and optional weights.
void launch_nll_loss(const float* x, const int64_t* target, const float* w, float* y, int64_t n,
                     int64_t c, int64_t inner, bool ignore, int64_t ignored, bool none, bool mean,
                     int* error, cudaStream_t stream);
/// NLLLossGrad into dx (zeroed by the caller).
void launch_nll_loss_grad(const float* dy, const int64_t* target, const float* w, float* dx,
                          int64_t n, int64_t c, int64_t inner, bool ignore, int64_t ignored,
                          bool none, bool mean, int* error, cudaStream_t stream);

// ---- attention.cu ---------------------------------------------------------------------------
/// Attention: attention_forward_row for every query row (p.out_y and p.out_lse, either may be
/// null), one thread per row.
void launch_attention(const kernels::AttentionTensors& p, const kernels::AttentionDims& a,
                      cudaStream_t stream);
/// AttentionGrad into the outputs p names (dq, dk, dv; null ones skipped): Δ per query row
/// into p.delta (device scratch of a.batch * a.s doubles, needed when dq or dk is wanted), then
/// dQ per query row, then dK and dV per key row, one thread per row.
void launch_attention_grad(const kernels::AttentionTensors& p, const kernels::AttentionDims& a,
                           cudaStream_t stream);

// ---- rnn.cu ---------------------------------------------------------------------------------
/// rnn_element(k, p, e) for e in [0, n), one thread each.
void launch_rnn(kernels::RnnKernel k, const kernels::RnnStep& p, int64_t n, cudaStream_t stream);

// ---- norm.cu ---------------------------------------------------------------------------------
/// A reduction: every output element folds the elements of a sub-box of x. `kept` maps the
/// output index to x's base offset (strides of the kept dims), `red` enumerates the reduced
/// elements (their extents and strides); accumulated in double, in row-major order of the
/// reduced box per output (one block per output, fixed tree).
struct ReduceGeom {
  int kept_rank = 0;
  int64_t kept_shape[kMaxDims] = {};
  int64_t kept_strides[kMaxDims] = {};
  int red_rank = 0;
  int64_t red_shape[kMaxDims] = {};
  int64_t red_strides[kMaxDims] = {};
  int64_t n_out = 0, n_red = 0;
};
/// y[o] = fold over the box of o (mean divides by n_red; max/min propagate NaN).
void launch_reduce(ReduceKind kind, const ReduceGeom& g, const float* x, float* y,
                   cudaStream_t stream);
/// Softmax / LogSoftmax along an axis: x as [outer, extent, inner].
void launch_softmax(bool log, const float* x, float* y, int64_t outer, int64_t extent,
                    int64_t inner, cudaStream_t stream);
/// SoftmaxGrad (log: LogSoftmax form).
void launch_softmax_grad(bool log, const float* dy, const float* y, float* dx, int64_t outer,
                         int64_t extent, int64_t inner, cudaStream_t stream);
/// LayerNormalization on rows [outer, inner]; mean/rstd (optional, may be null) per row.
void launch_layer_norm(const float* x, const float* scale, const float* bias, float* y, float* mean,
                       float* rstd, int64_t outer, int64_t inner, double eps, cudaStream_t stream);
/// LayerNormGrad: dx per row.
void launch_layer_norm_grad(const float* dy, const float* x, const float* scale, float* dx,
                            int64_t outer, int64_t inner, double eps, cudaStream_t stream);
/// LayerNormParamGrad: dscale, dbias (each may be null); `stats` is 2*outer doubles of
/// scratch.
void launch_layer_norm_param_grad(const float* dy, const float* x, float* dscale, float* dbias,
                                  double* stats, int64_t outer, int64_t inner, double eps,
                                  cudaStream_t stream);
/// BatchNormalization (inference): x as [outer, c, inner].
void launch_batch_norm(const float* x, const float* scale, const float* bias, const float* mean,
                       const float* var, float* y, int64_t outer, int64_t c, int64_t inner,
                       double eps, cudaStream_t stream);
/// BatchNormGrad: dx = dy * scale_c / sqrt(var_c + eps).
void launch_batch_norm_grad(const float* dy, const float* scale, const float* var, float* dx,
                            int64_t outer, int64_t c, int64_t inner, double eps,
                            cudaStream_t stream);
/// BatchNormParamGrad: dscale, dbias (each may be null), one block per channel.
void launch_batch_norm_param_grad(const float* dy, const float* x, const float* mean,
                                  const float* var, float* dscale, float* dbias, int64_t outer,
                                  int64_t c, int64_t inner, double eps, cudaStream_t stream);

/// BatchNormStats: stats[2, c] = (sum x, sum x^2) / count per channel, one block per channel.
void launch_batch_norm_stats(const float* x, float* stats, int64_t outer, int64_t c, int64_t inner,
                             double count, cudaStream_t stream);
/// BatchNormTrain: y from x and the reduced stats [2, c].
void launch_batch_norm_train(const float* x, const float* scale, const float* bias,
                             const float* stats, float* y, int64_t outer, int64_t c, int64_t inner,
                             double eps, cudaStream_t stream);
/// BatchNormTrainParamGrad: dscale = sum dy * xhat, dbias = sum dy (each may be null).
void launch_batch_norm_train_param_grad(const float* dy, const float* x, const float* stats,
                                        float* dscale, float* dbias, int64_t outer, int64_t c,
                                        int64_t inner, double eps, cudaStream_t stream);
/// BatchNormTrainGrad: dx from dy, x, scale, stats and the reduced dscale, dbias.
void launch_batch_norm_train_grad(const float* dy, const float* x, const float* scale,
                                  const float* stats, const float* dscale, const float* dbias,
                                  float* dx, int64_t outer, int64_t c, int64_t inner, double eps,
                                  double count, cudaStream_t stream);
/// BatchNormRunningStats: the present outputs of out[4] (nullptr for absent) per channel
/// (train_math.h's running_stat).
void launch_batch_norm_running_stats(const float* stats, const float* mean, const float* var,
                                     float* const out[4], int64_t c, double momentum,
                                     cudaStream_t stream);
/// DropoutTrain: y and mask (may be null) for the shard `layout` of n elements.
void launch_dropout_train(const kernels::DropoutLayout& layout, uint64_t seed, float ratio,
                          const float* x, float* y, bool* mask, int64_t n, cudaStream_t stream);
/// DropoutGrad: dx = mask ? dy / (1 - ratio) : 0.
void launch_dropout_grad(const float* dy, const bool* mask, float* dx, int64_t n, float ratio,
                         cudaStream_t stream);

}  // namespace planner::rt::cuda
