// The cuda backend's kernels, as the kernel table (kernel_registry.cpp) names them, and the host
// fallback that runs a cpu kernel on copies of device tensors.
#pragma once

#include "../kernel_util.h"

namespace planner::rt::kernels {

/// Runs cpu kernel `fn` for a call whose tensors are in device memory: copies every present
/// input (and output, which kernels may read or update in place) to host buffers, runs `fn`
/// there, and copies the outputs back; tensors sharing device memory share the host copy.
/// With `copy_inputs` false the inputs are passed as views without data (for kernels that read
/// only shapes, like Shape). Correct, not fast.
void host_fallback(const KernelContext& ctx, KernelFn fn, bool copy_inputs = true);

// elementwise_cuda.cpp
void c_unary(const KernelContext&);
void c_clip(const KernelContext&);
void c_not(const KernelContext&);
void c_copy(const KernelContext&);  // Identity, Reshape, Flatten, Squeeze, Unsqueeze
void c_dropout(const KernelContext&);
void c_binary(const KernelContext&);
void c_variadic(const KernelContext&);
void c_compare(const KernelContext&);
void c_where(const KernelContext&);
void c_transpose(const KernelContext&);
void c_shape(const KernelContext&);
void c_loss_grad(const KernelContext&);
void c_unary_grad(const KernelContext&);
void c_div_grad_b(const KernelContext&);
void c_where_grad(const KernelContext&);
void c_zeros_like(const KernelContext&);
void c_sgd(const KernelContext&);
void c_momentum(const KernelContext&);
void c_adam(const KernelContext&);
void c_dropout_train(const KernelContext&);
void c_dropout_grad(const KernelContext&);
// shape_ops_cuda.cpp
void c_slice(const KernelContext&);
void c_slice_grad(const KernelContext&);
void c_concat(const KernelContext&);
void c_split(const KernelContext&);
void c_pad(const KernelContext&);
void c_pad_grad(const KernelContext&);
void c_expand(const KernelContext&);
void c_tile(const KernelContext&);
void c_gather(const KernelContext&);
void c_gather_grad(const KernelContext&);
void c_cast(const KernelContext&);
void c_cast_like(const KernelContext&);
void c_range(const KernelContext&);
void c_constant_of_shape(const KernelContext&);
void c_constant(const KernelContext&);
void c_pool_grad(const KernelContext&);
void c_global_pool_grad(const KernelContext&);
// norm_cuda.cpp
void c_reduce(const KernelContext&);
void c_reduce_grad(const KernelContext&);
void c_global_pool(const KernelContext&);
void c_softmax(const KernelContext&);
void c_softmax_grad(const KernelContext&);
void c_layer_norm(const KernelContext&);
void c_layer_norm_grad(const KernelContext&);
void c_layer_norm_param_grad(const KernelContext&);
void c_batch_norm(const KernelContext&);
void c_batch_norm_grad(const KernelContext&);
void c_batch_norm_param_grad(const KernelContext&);
void c_batch_norm_stats(const KernelContext&);
void c_batch_norm_train(const KernelContext&);
void c_batch_norm_running_stats(const KernelContext&);
void c_batch_norm_train_param_grad(const KernelContext&);
void c_batch_norm_train_grad(const KernelContext&);
// linalg_cuda.cpp (cuBLAS)
void c_matmul(const KernelContext&);
void c_gemm(const KernelContext&);
void c_matmul_grad_weight(const KernelContext&);
void c_matmul_trans_b(const KernelContext&);
/// Row-major f32 C = alpha op(A) op(B) + beta C on the context's stream (rnn_cuda.cpp's products).
void gemm_f32(const KernelContext& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
              float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
              float* c, int64_t ldc);
// select_cuda.cpp
void c_arg_extreme(const KernelContext&);
void c_trilu(const KernelContext&);
void c_topk(const KernelContext&);
void c_topk_grad(const KernelContext&);
void c_cumsum(const KernelContext&);
void c_one_hot(const KernelContext&);
// resize_cuda.cpp
void c_resize(const KernelContext&);
void c_resize_grad(const KernelContext&);
void c_gather_elements(const KernelContext&);
void c_gather_elements_grad(const KernelContext&);
void c_nll_loss(const KernelContext&);
void c_nll_loss_grad(const KernelContext&);
// attention_cuda.cpp
void c_attention(const KernelContext&);
void c_attention_grad(const KernelContext&);
// rnn_cuda.cpp (rnn_program.h on cuBLAS and rnn.cu)
void c_lstm(const KernelContext&);
void c_gru(const KernelContext&);
void c_rnn(const KernelContext&);
void c_lstm_grad_data(const KernelContext&);
void c_lstm_grad_weights(const KernelContext&);
void c_gru_grad(const KernelContext&);
void c_rnn_grad(const KernelContext&);
// conv_cuda.cpp (cuDNN)
void c_conv(const KernelContext&);
void c_conv_grad_data(const KernelContext&);
void c_conv_grad_filter(const KernelContext&);
void c_pool(const KernelContext&);

}  // namespace planner::rt::kernels
