// The kernel table: (domain, op type) -> the cpu kernel and how the cuda backend runs it, and
// run_kernel's dispatch.
#include <algorithm>
#include <atomic>

#include "kernel_call.h"
#include "kernel_util.h"
#include "precision_boundary.h"
#if PLANNER_RT_CUDA
#include "cuda/cuda_kernels.h"
#endif

// OpenBLAS's thread control, if the BLAS found is OpenBLAS; weak so other BLAS builds link.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace planner::rt {
namespace {

using namespace kernels;

// How the cuda backend runs an operator (the cpu backend always runs `cpu`).
enum Impl {
  kCuda,    ///< the library's own kernels (cuda/*.cu)
  kCublas,  ///< cuBLAS
  kCudnn,   ///< cuDNN (falling back to the host for attributes cuDNN lacks)
  kHost,    ///< host fallback: inputs copied to the host, `cpu` run, outputs copied back
};

struct Entry {
  std::string_view domain;  ///< "" (ONNX) or "ai.planner"
  std::string_view op_type;
  KernelFn cpu;   ///< the cpu kernel: the cpu backend's, and every host fallback's
  Impl impl;      ///< what the cuda backend uses
  KernelFn cuda;  ///< the cuda kernel (nullptr for kHost and in cpu builds)
};

#if PLANNER_RT_CUDA
#define CUDA(fn) fn
#else
#define CUDA(fn) nullptr
#endif

// One row per operator; several rows may share a kernel that switches on the op type. The
// columns: domain, op type, cpu kernel, cuda implementation, cuda kernel.
constexpr Entry kKernels[] = {
    // element-wise unary
    {"", "Relu", k_unary, kCuda, CUDA(c_unary)},
    {"", "Sigmoid", k_unary, kCuda, CUDA(c_unary)},
    {"", "Tanh", k_unary, kCuda, CUDA(c_unary)},
    {"", "Erf", k_unary, kCuda, CUDA(c_unary)},
    {"", "Sqrt", k_unary, kCuda, CUDA(c_unary)},
    {"", "Exp", k_unary, kCuda, CUDA(c_unary)},
    {"", "Log", k_unary, kCuda, CUDA(c_unary)},
    {"", "Abs", k_unary, kCuda, CUDA(c_unary)},
    {"", "Neg", k_unary, kCuda, CUDA(c_unary)},
    {"", "Gelu", k_unary, kCuda, CUDA(c_unary)},
    {"", "Softplus", k_unary, kCuda, CUDA(c_unary)},
    {"", "LeakyRelu", k_unary, kCuda, CUDA(c_unary)},
    {"", "Elu", k_unary, kCuda, CUDA(c_unary)},
    {"", "Selu", k_unary, kCuda, CUDA(c_unary)},
    {"", "Reciprocal", k_unary, kCuda, CUDA(c_unary)},
    {"", "Softsign", k_unary, kCuda, CUDA(c_unary)},
    {"", "Tan", k_unary, kCuda, CUDA(c_unary)},
    {"", "Asin", k_unary, kCuda, CUDA(c_unary)},
    {"", "Acos", k_unary, kCuda, CUDA(c_unary)},
    {"", "Atan", k_unary, kCuda, CUDA(c_unary)},
    {"", "Sinh", k_unary, kCuda, CUDA(c_unary)},
    {"", "Cosh", k_unary, kCuda, CUDA(c_unary)},
    {"", "Asinh", k_unary, kCuda, CUDA(c_unary)},
    {"", "Acosh", k_unary, kCuda, CUDA(c_unary)},
    {"", "Atanh", k_unary, kCuda, CUDA(c_unary)},
    {"", "Celu", k_unary, kCuda, CUDA(c_unary)},
    {"", "ThresholdedRelu", k_unary, kCuda, CUDA(c_unary)},
    {"", "Shrink", k_unary, kCuda, CUDA(c_unary)},
    {"", "Round", k_unary, kCuda, CUDA(c_unary)},
    {"", "Sign", k_unary, kCuda, CUDA(c_unary)},
    {"", "HardSigmoid", k_unary, kCuda, CUDA(c_unary)},
    {"", "Sin", k_unary, kCuda, CUDA(c_unary)},
    {"", "Cos", k_unary, kCuda, CUDA(c_unary)},
    {"", "Mish", k_unary, kCuda, CUDA(c_unary)},
    {"", "HardSwish", k_unary, kCuda, CUDA(c_unary)},
    {"", "Ceil", k_unary, kCuda, CUDA(c_unary)},
    {"", "Floor", k_unary, kCuda, CUDA(c_unary)},
    {"", "Clip", k_clip, kCuda, CUDA(c_clip)},
    {"", "Not", k_not, kCuda, CUDA(c_not)},
    {"", "Cast", k_cast, kCuda, CUDA(c_cast)},
    {"", "CastLike", k_cast_like, kCuda, CUDA(c_cast_like)},
    {"", "Identity", k_identity, kCuda, CUDA(c_copy)},
    {"", "Dropout", k_dropout, kCuda, CUDA(c_dropout)},
    // element-wise binary and variadic
    {"", "Add", k_binary, kCuda, CUDA(c_binary)},
    {"", "Sub", k_binary, kCuda, CUDA(c_binary)},
    {"", "Mul", k_binary, kCuda, CUDA(c_binary)},
    {"", "Div", k_binary, kCuda, CUDA(c_binary)},
    {"", "Pow", k_binary, kCuda, CUDA(c_binary)},
    {"", "Sum", k_variadic, kCuda, CUDA(c_variadic)},
    {"", "Max", k_variadic, kCuda, CUDA(c_variadic)},
    {"", "Min", k_variadic, kCuda, CUDA(c_variadic)},
    {"", "Mean", k_variadic, kCuda, CUDA(c_variadic)},
    {"", "Equal", k_compare, kCuda, CUDA(c_compare)},
    {"", "Less", k_compare, kCuda, CUDA(c_compare)},
    {"", "Greater", k_compare, kCuda, CUDA(c_compare)},
    {"", "LessOrEqual", k_compare, kCuda, CUDA(c_compare)},
    {"", "GreaterOrEqual", k_compare, kCuda, CUDA(c_compare)},
    {"", "And", k_compare, kCuda, CUDA(c_compare)},
    {"", "Or", k_compare, kCuda, CUDA(c_compare)},
    {"", "Xor", k_compare, kCuda, CUDA(c_compare)},
    {"", "Where", k_where, kCuda, CUDA(c_where)},
    // linear algebra, convolution, pooling, normalisation
    {"", "MatMul", k_matmul, kCublas, CUDA(c_matmul)},
    {"", "Gemm", k_gemm, kCublas, CUDA(c_gemm)},
    {"", "Conv", k_conv, kCudnn, CUDA(c_conv)},
    {"", "MaxPool", k_max_pool, kCudnn, CUDA(c_pool)},
    {"", "AveragePool", k_average_pool, kCudnn, CUDA(c_pool)},
    {"", "GlobalAveragePool", k_global_average_pool, kCuda, CUDA(c_global_pool)},
    {"", "GlobalMaxPool", k_global_max_pool, kCuda, CUDA(c_global_pool)},
    {"", "BatchNormalization", k_batch_norm, kCuda, CUDA(c_batch_norm)},
    {"", "LayerNormalization", k_layer_norm, kCuda, CUDA(c_layer_norm)},
    {"", "Softmax", k_softmax, kCuda, CUDA(c_softmax)},
    {"", "LogSoftmax", k_softmax, kCuda, CUDA(c_softmax)},
    // reductions
    {"", "ReduceMean", k_reduce, kCuda, CUDA(c_reduce)},
    {"", "ReduceSum", k_reduce, kCuda, CUDA(c_reduce)},
    {"", "ReduceMax", k_reduce, kCuda, CUDA(c_reduce)},
    {"", "ReduceMin", k_reduce, kCuda, CUDA(c_reduce)},
    {"", "ArgMax", k_arg_extreme, kCuda, CUDA(c_arg_extreme)},
    {"", "ArgMin", k_arg_extreme, kCuda, CUDA(c_arg_extreme)},
    // data movement
    {"", "Transpose", k_transpose, kCuda, CUDA(c_transpose)},
    {"", "Reshape", k_reshape, kCuda, CUDA(c_copy)},
    {"", "Flatten", k_flatten, kCuda, CUDA(c_copy)},
    {"", "Squeeze", k_squeeze, kCuda, CUDA(c_copy)},
    {"", "Unsqueeze", k_unsqueeze, kCuda, CUDA(c_copy)},
    {"", "Concat", k_concat, kCuda, CUDA(c_concat)},
    {"", "Split", k_split, kCuda, CUDA(c_split)},
    {"", "Slice", k_slice, kCuda, CUDA(c_slice)},
    {"", "Pad", k_pad, kCuda, CUDA(c_pad)},
    {"", "Expand", k_expand, kCuda, CUDA(c_expand)},
    {"", "Tile", k_tile, kCuda, CUDA(c_tile)},
    {"", "Range", k_range, kCuda, CUDA(c_range)},
    {"", "ConstantOfShape", k_constant_of_shape, kCuda, CUDA(c_constant_of_shape)},
    {"", "Constant", k_constant, kCuda, CUDA(c_constant)},
    {"", "Shape", k_shape, kCuda, CUDA(c_shape)},
    {"", "Gather", k_gather, kCuda, CUDA(c_gather)},
    {"", "Trilu", k_trilu, kCuda, CUDA(c_trilu)},
    {"", "TopK", k_topk, kCuda, CUDA(c_topk)},
    {"", "CumSum", k_cumsum, kCuda, CUDA(c_cumsum)},
    {"", "OneHot", k_one_hot, kCuda, CUDA(c_one_hot)},
    {"", "Resize", k_resize, kCuda, CUDA(c_resize)},
    {"", "GatherElements", k_gather_elements, kCuda, CUDA(c_gather_elements)},
    {"", "NegativeLogLikelihoodLoss", k_nll_loss, kCuda, CUDA(c_nll_loss)},
    // recurrent
    {"", "LSTM", k_lstm, kCublas, CUDA(c_lstm)},
    {"", "GRU", k_gru, kCublas, CUDA(c_gru)},
    {"", "RNN", k_rnn, kCublas, CUDA(c_rnn)},
    // ai.planner: backward
    {"ai.planner", "LossGrad", k_loss_grad, kCuda, CUDA(c_loss_grad)},
    {"ai.planner", "ResizeGrad", k_resize_grad, kCuda, CUDA(c_resize_grad)},
    {"ai.planner", "ConvGradData", k_conv_grad_data, kCudnn, CUDA(c_conv_grad_data)},
    {"ai.planner", "ConvGradFilter", k_conv_grad_filter, kCudnn, CUDA(c_conv_grad_filter)},
    {"ai.planner", "UnaryGrad", k_unary_grad, kCuda, CUDA(c_unary_grad)},
    {"ai.planner", "DivGradB", k_div_grad_b, kCuda, CUDA(c_div_grad_b)},
    {"ai.planner", "WhereGrad", k_where_grad, kCuda, CUDA(c_where_grad)},
    {"ai.planner", "ReduceGrad", k_reduce_grad, kCuda, CUDA(c_reduce_grad)},
    {"ai.planner", "GlobalPoolGrad", k_global_pool_grad, kCuda, CUDA(c_global_pool_grad)},
    {"ai.planner", "PoolGrad", k_pool_grad, kCuda, CUDA(c_pool_grad)},
    {"ai.planner", "SoftmaxGrad", k_softmax_grad, kCuda, CUDA(c_softmax_grad)},
    {"ai.planner", "LayerNormGrad", k_layer_norm_grad, kCuda, CUDA(c_layer_norm_grad)},
    {"ai.planner", "LayerNormParamGrad", k_layer_norm_param_grad, kCuda,
     CUDA(c_layer_norm_param_grad)},
    {"ai.planner", "BatchNormGrad", k_batch_norm_grad, kCuda, CUDA(c_batch_norm_grad)},
    {"ai.planner", "BatchNormParamGrad", k_batch_norm_param_grad, kCuda,
     CUDA(c_batch_norm_param_grad)},
    // ai.planner: training-mode batch norm and dropout (importers/training_ops.h)
    {"ai.planner", "BatchNormStats", k_batch_norm_stats, kCuda, CUDA(c_batch_norm_stats)},
    {"ai.planner", "BatchNormTrain", k_batch_norm_train, kCuda, CUDA(c_batch_norm_train)},
    {"ai.planner", "BatchNormRunningStats", k_batch_norm_running_stats, kCuda,
     CUDA(c_batch_norm_running_stats)},
    {"ai.planner", "BatchNormTrainParamGrad", k_batch_norm_train_param_grad, kCuda,
     CUDA(c_batch_norm_train_param_grad)},
    {"ai.planner", "BatchNormTrainGrad", k_batch_norm_train_grad, kCuda,
     CUDA(c_batch_norm_train_grad)},
    {"ai.planner", "DropoutTrain", k_dropout_train, kCuda, CUDA(c_dropout_train)},
    {"ai.planner", "DropoutGrad", k_dropout_grad, kCuda, CUDA(c_dropout_grad)},
    {"ai.planner", "MatMulGradWeight", k_matmul_grad_weight, kCublas, CUDA(c_matmul_grad_weight)},
    {"ai.planner", "MatMulTransB", k_matmul_trans_b, kCublas, CUDA(c_matmul_trans_b)},
    {"ai.planner", "SliceGrad", k_slice_grad, kCuda, CUDA(c_slice_grad)},
    {"ai.planner", "PadGrad", k_pad_grad, kCuda, CUDA(c_pad_grad)},
    {"ai.planner", "GatherGrad", k_gather_grad, kCuda, CUDA(c_gather_grad)},
    {"ai.planner", "TopKGrad", k_topk_grad, kCuda, CUDA(c_topk_grad)},
    {"ai.planner", "NLLLossGrad", k_nll_loss_grad, kCuda, CUDA(c_nll_loss_grad)},
    {"ai.planner", "GatherElementsGrad", k_gather_elements_grad, kCuda,
     CUDA(c_gather_elements_grad)},
    {"ai.planner", "Attention", k_attention, kCuda, CUDA(c_attention)},
    {"ai.planner", "AttentionGrad", k_attention_grad, kCuda, CUDA(c_attention_grad)},
    {"ai.planner", "LSTMGradData", k_lstm_grad_data, kCublas, CUDA(c_lstm_grad_data)},
    {"ai.planner", "LSTMGradWeights", k_lstm_grad_weights, kCublas, CUDA(c_lstm_grad_weights)},
    {"ai.planner", "GRUGrad", k_gru_grad, kCublas, CUDA(c_gru_grad)},
    {"ai.planner", "RNNGrad", k_rnn_grad, kCublas, CUDA(c_rnn_grad)},
    {"ai.planner", "ZerosLike", k_zeros_like, kCuda, CUDA(c_zeros_like)},
    // ai.planner: optimizers
    {"ai.planner", "SGD", k_sgd, kCuda, CUDA(c_sgd)},
    {"ai.planner", "Momentum", k_momentum, kCuda, CUDA(c_momentum)},
    {"ai.planner", "Adam", k_adam, kCuda, CUDA(c_adam)},
};

std::string_view canonical_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string_view() : domain;
}

const Entry* find(std::string_view domain, std::string_view op_type) {
  domain = canonical_domain(domain);
  for (const Entry& e : kKernels)
    if (e.domain == domain && e.op_type == op_type) return &e;
  return nullptr;
}

// Levenshtein distance, for "did you mean" on unknown operators.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      prev = cur;
    }
  }
  return row[b.size()];
}

std::once_flag blas_once;

}  // namespace

void set_blas_threads(int threads) {
  if (openblas_set_num_threads) openblas_set_num_threads(std::max(1, threads));
}

std::string_view kernel_implementation(std::string_view domain, std::string_view op_type) {
#if PLANNER_RT_CUDA
  return cuda_implementation(domain, op_type);
#else
  return find(domain, op_type) ? "cpu" : "";
#endif
}

std::string_view cuda_implementation(std::string_view domain, std::string_view op_type) {
  const Entry* e = find(domain, op_type);
  if (!e) return "";
  switch (e->impl) {
    case kCuda:
      return "cuda";
    case kCublas:
      return "cublas";
    case kCudnn:
      return "cudnn";
    case kHost:
      return "host";
  }
  return "";
}

bool has_kernel(std::string_view domain, std::string_view op_type) {
  return find(domain, op_type) != nullptr;
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const Entry& e : kKernels)
    names.push_back((e.domain.empty() ? std::string("ai.onnx") : std::string(e.domain)) + "." +
                    std::string(e.op_type));
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// The Error run_kernel raises for an unknown operator, with a "did you mean" when one is close.
[[noreturn]] void fail_unknown(const KernelContext& ctx, std::string_view domain,
                               std::string_view op_type) {
  std::string msg = "no kernel for operator '" +
                    (canonical_domain(domain).empty() ? std::string() : std::string(domain) + ".") +
                    std::string(op_type) + "'";
  const Entry* best = nullptr;
  size_t best_d = 3;
  for (const Entry& k : kKernels) {
    size_t d = edit_distance(k.op_type, op_type);
    if (d < best_d) best_d = d, best = &k;
  }
  if (best)
    msg += "; did you mean '" +
           (best->domain.empty() ? std::string() : std::string(best->domain) + ".") +
           std::string(best->op_type) + "'?";
  ctx.fail(msg);
}

}  // namespace

void run_kernel(std::string_view domain, std::string_view op_type, const Attributes& attrs,
                std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                std::string_view node) {
  std::call_once(blas_once, [] { set_blas_threads(1); });
  const Entry* e = find(domain, op_type);
  KernelContext ctx{op_type, node, attrs, inputs, outputs};
  if (!e) fail_unknown(ctx, domain, op_type);
#if PLANNER_RT_CUDA
  // What types, shapes and attributes already send to the host goes there before a device
  // kernel sees it: the rule `planner compile` counts by (planner_rt/cuda_host_calls.h).
  if (!kernels::cuda_host_reason(ctx, domain).empty()) return host_fallback(ctx, e->cpu);
  run_on_device(ctx, e->cuda, e->cpu);
#else
  run_on_host(ctx, e->cpu);
#endif
}

void run_cpu_kernel(std::string_view domain, std::string_view op_type, const Attributes& attrs,
                    std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    std::string_view node) {
  std::call_once(blas_once, [] { set_blas_threads(1); });
  const Entry* e = find(domain, op_type);
  KernelContext ctx{op_type, node, attrs, inputs, outputs};
  if (!e) fail_unknown(ctx, domain, op_type);
  run_on_host(ctx, e->cpu);
}

}  // namespace planner::rt
