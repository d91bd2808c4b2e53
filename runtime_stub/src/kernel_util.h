// Shared helpers of the kernel files: the call context, attribute access, checks, broadcasting.
#pragma once

#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "planner_rt/kernels.h"
#include "train_math.h"
#include "unary_math.h"

namespace planner::rt::kernels {

/// One kernel call: what the kernel may read, with checks that raise Error naming the node.
struct KernelContext {
  std::string_view op_type;
  std::string_view node;
  const Attributes& attrs;
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;

  /// Raises Error "node 'n' (Op): what".
  [[noreturn]] void fail(const std::string& what) const;

  bool has_in(size_t i) const { return i < inputs.size() && inputs[i].present(); }
  bool has_out(size_t i) const { return i < outputs.size() && outputs[i].present(); }
  /// Required input i; fails when it is missing.
  const Tensor& in(size_t i) const;
  /// Required output i; fails when it is missing.
  const Tensor& out(size_t i) const;

  /// Fails when an input past the first `n_in` or an output past the first `n_out` is present
  /// (trailing absent ones are fine); `signature` ("(dY, X) -> dX") names what is expected.
  void expect_arity(size_t n_in, size_t n_out, const std::string& signature) const;

  bool has_attr(const std::string& name) const { return attrs.count(name) != 0; }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;

  /// Fails unless tensor `t` (named `what` in the message) has dtype `d`.
  void expect_dtype(const Tensor& t, DType d, const std::string& what) const;
  /// Fails unless output i has exactly `shape`.
  void expect_out_shape(size_t i, const Shape& shape) const;
  /// Fails unless output i has input-like dtype `d` and `shape`.
  void expect_out(size_t i, DType d, const Shape& shape) const;
  /// The values of an integer tensor (i64 or i32), e.g. a shape or axes input.
  std::vector<int64_t> ints_of(const Tensor& t, const std::string& what) const;
  /// An axis in [-rank, rank) made non-negative; fails when out of range.
  int64_t norm_axis(int64_t axis, int64_t rank) const;
  /// The numpy broadcast of several shapes; fails when they are incompatible.
  Shape broadcast(const std::vector<Shape>& shapes) const;
};

using KernelFn = void (*)(const KernelContext&);

/// Row-major strides of a shape, in elements.
std::vector<int64_t> strides_of(const Shape& shape);

/// Strides of `in` read as if broadcast to `out` (0 along broadcast axes); in has rank <= out.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

/// Calls f(out_index, in_offsets) for every element of `out` in row-major order, with the
/// offset of each of N inputs broadcast to `out`.
template <size_t N, typename F>
void broadcast_loop(const Shape& out, const std::array<Shape, N>& ins, F&& f) {
  const int64_t total = num_elements(out);
  if (total == 0) return;
  const size_t r = out.size();
  std::array<std::vector<int64_t>, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = broadcast_strides(ins[k], out);
  if (r == 0) {
    std::array<int64_t, N> offs{};
    f(int64_t{0}, offs);
    return;
  }
  const int64_t inner = out[r - 1];
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; ++k) inner_st[k] = st[k][r - 1];
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> base{};
  for (int64_t o = 0; o < total; o += inner) {
    std::array<int64_t, N> offs = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(o + j, offs);
      for (size_t k = 0; k < N; ++k) offs[k] += inner_st[k];
    }
    // advance the outer multi-index
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d) {
      size_t du = static_cast<size_t>(d);
      ++idx[du];
      for (size_t k = 0; k < N; ++k) base[k] += st[k][du];
      if (idx[du] < out[du]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= st[k][du] * out[du];
      idx[du] = 0;
    }
  }
}

/// Reads element i of a numeric tensor as double (f32, i32, i64, u8, bool).
double load_as_double(const Tensor& t, int64_t i);
/// Writes element i of a numeric tensor from double (rounding toward zero for integers).
void store_from_double(const Tensor& t, int64_t i, double v);

/// Single-precision GEMM on row-major matrices: C = alpha * op(A) * op(B) + beta * C,
/// op(A) is m x k, op(B) is k x n; lda/ldb/ldc are row strides.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

/// Sliding-window geometry shared by Conv, its gradients and pooling (spatial dims only).
struct Window {
  Shape in;      ///< input spatial extents
  Shape kernel;  ///< kernel extents
  Shape strides, dilations, pad_begin, pad_end;
  Shape out;  ///< output spatial extents
  /// For every (kernel position, output position) pair, kernel-major, the input offset it
  /// reads within one channel, or -1 where it falls into padding.
  std::vector<int64_t> offsets() const;
};
/// The geometry from the attributes auto_pad, pads, strides, dilations (and ceil_mode for
/// pooling); fails on bad attributes or an empty output.
Window window_geometry(const KernelContext& ctx, const Shape& in, const Shape& kernel,
                       bool ceil_mode);

/// Conv's operands: batch, input channels, output channels, groups, and the window.
struct ConvShapes {
  int64_t n, c, m, group;
  Window w;
};
/// Checks X [N,C,*in], W [M,C/group,*k] and the attributes (every backend's Conv kernels).
ConvShapes conv_shapes(const KernelContext& ctx, const Shape& x, const Shape& wt);
/// The output (and dY) shape [N, M, *w.out].
Shape conv_out_shape(const ConvShapes& s);

// ---- kernel entry points, one per operator, grouped by file --------------------------------
// elementwise.cpp
void k_unary(const KernelContext&);
void k_binary(const KernelContext&);
void k_variadic(const KernelContext&);
void k_compare(const KernelContext&);
void k_not(const KernelContext&);
void k_where(const KernelContext&);
void k_clip(const KernelContext&);
void k_cast(const KernelContext&);
void k_identity(const KernelContext&);
void k_dropout(const KernelContext&);
void k_unary_grad(const KernelContext&);
void k_div_grad_b(const KernelContext&);
void k_where_grad(const KernelContext&);
void k_loss_grad(const KernelContext&);
// linalg.cpp
void k_matmul(const KernelContext&);
void k_gemm(const KernelContext&);
void k_matmul_grad_weight(const KernelContext&);
void k_matmul_trans_b(const KernelContext&);
// conv.cpp
void k_conv(const KernelContext&);
void k_conv_grad_data(const KernelContext&);
void k_conv_grad_filter(const KernelContext&);
// pool.cpp
void k_max_pool(const KernelContext&);
void k_average_pool(const KernelContext&);
void k_global_average_pool(const KernelContext&);
void k_global_max_pool(const KernelContext&);
void k_pool_grad(const KernelContext&);
void k_global_pool_grad(const KernelContext&);
// norm.cpp
void k_batch_norm(const KernelContext&);
void k_layer_norm(const KernelContext&);
void k_softmax(const KernelContext&);
void k_batch_norm_grad(const KernelContext&);
void k_batch_norm_param_grad(const KernelContext&);
void k_layer_norm_grad(const KernelContext&);
void k_layer_norm_param_grad(const KernelContext&);
void k_softmax_grad(const KernelContext&);
void k_batch_norm_stats(const KernelContext&);
void k_batch_norm_train(const KernelContext&);
void k_batch_norm_running_stats(const KernelContext&);
void k_batch_norm_train_param_grad(const KernelContext&);
void k_batch_norm_train_grad(const KernelContext&);
// dropout.cpp
void k_dropout_train(const KernelContext&);
void k_dropout_grad(const KernelContext&);
/// DropoutTrain's shard layout from its local shape and the shard_offset / full_shape
/// attributes (absent: the op is whole).
DropoutLayout dropout_layout(const KernelContext& ctx, const Shape& local);
/// The ratio attribute, checked to be in [0, 1).
float dropout_ratio(const KernelContext& ctx);
// reduce.cpp
void k_reduce(const KernelContext&);
void k_reduce_grad(const KernelContext&);
// shape_ops.cpp
void k_transpose(const KernelContext&);
void k_reshape(const KernelContext&);
void k_flatten(const KernelContext&);
void k_squeeze(const KernelContext&);
void k_unsqueeze(const KernelContext&);
void k_concat(const KernelContext&);
void k_split(const KernelContext&);
void k_slice(const KernelContext&);
void k_pad(const KernelContext&);
void k_expand(const KernelContext&);
void k_tile(const KernelContext&);
void k_range(const KernelContext&);
void k_constant_of_shape(const KernelContext&);
void k_constant(const KernelContext&);
void k_shape(const KernelContext&);
void k_gather(const KernelContext&);
void k_slice_grad(const KernelContext&);
void k_pad_grad(const KernelContext&);
void k_gather_grad(const KernelContext&);
void k_zeros_like(const KernelContext&);
// rnn.cpp
/// CastLike through `cast` (a backend's Cast kernel): Cast to input 1's type, its values unread.
void cast_like(const KernelContext& ctx, KernelFn cast);
void k_cast_like(const KernelContext&);
void k_arg_extreme(const KernelContext&);  // ArgMax, ArgMin
void k_trilu(const KernelContext&);
void k_topk(const KernelContext&);
void k_topk_grad(const KernelContext&);
void k_cumsum(const KernelContext&);
void k_one_hot(const KernelContext&);
void k_resize(const KernelContext&);
void k_resize_grad(const KernelContext&);
// loss.cpp
void k_gather_elements(const KernelContext&);
void k_gather_elements_grad(const KernelContext&);
void k_nll_loss(const KernelContext&);
void k_nll_loss_grad(const KernelContext&);
// attention.cpp
void k_attention(const KernelContext&);
void k_attention_grad(const KernelContext&);
void k_lstm(const KernelContext&);
void k_gru(const KernelContext&);
void k_rnn(const KernelContext&);
void k_lstm_grad_data(const KernelContext&);
void k_lstm_grad_weights(const KernelContext&);
void k_gru_grad(const KernelContext&);
void k_rnn_grad(const KernelContext&);
// optim.cpp
void k_sgd(const KernelContext&);
void k_momentum(const KernelContext&);
void k_adam(const KernelContext&);

/// The UnaryOp named `op`, or false.
bool unary_op_from_name(std::string_view op, UnaryOp* result);
/// The op's attributes with ONNX defaults.
UnaryParams unary_params(UnaryOp op, const KernelContext& ctx);

/// UnaryGrad op=Clip's bounds: the attributes min and max where the training graph recorded
/// them (constant bounds), else none (the gradient passes where y == x).
ClipBounds clip_bounds(const KernelContext& ctx);
/// f(x).
double unary_value(UnaryOp op, const UnaryParams& p, double x);
/// f'(x), given x and y = f(x).
double unary_derivative(UnaryOp op, const UnaryParams& p, double x, double y);

}  // namespace planner::rt::kernels
