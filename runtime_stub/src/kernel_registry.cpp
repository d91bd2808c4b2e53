// The kernel table: (domain, op type) -> kernel, and run_kernel's dispatch.
#include <algorithm>
#include <atomic>

#include "kernel_util.h"

// OpenBLAS's thread control, if the BLAS found is OpenBLAS; weak so other BLAS builds link.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace planner::rt {
namespace {

using namespace kernels;

struct Entry {
  std::string_view domain;  ///< "" (ONNX) or "ai.planner"
  std::string_view op_type;
  KernelFn fn;
};

// One row per operator; several rows may share a kernel that switches on the op type.
constexpr Entry kKernels[] = {
    // element-wise unary
    {"", "Relu", k_unary},
    {"", "Sigmoid", k_unary},
    {"", "Tanh", k_unary},
    {"", "Erf", k_unary},
    {"", "Sqrt", k_unary},
    {"", "Exp", k_unary},
    {"", "Log", k_unary},
    {"", "Abs", k_unary},
    {"", "Neg", k_unary},
    {"", "Gelu", k_unary},
    {"", "Softplus", k_unary},
    {"", "LeakyRelu", k_unary},
    {"", "Elu", k_unary},
    {"", "Selu", k_unary},
    {"", "Reciprocal", k_unary},
    {"", "Softsign", k_unary},
    {"", "HardSigmoid", k_unary},
    {"", "Sin", k_unary},
    {"", "Cos", k_unary},
    {"", "Mish", k_unary},
    {"", "HardSwish", k_unary},
    {"", "Ceil", k_unary},
    {"", "Floor", k_unary},
    {"", "Clip", k_clip},
    {"", "Not", k_not},
    {"", "Cast", k_cast},
    {"", "Identity", k_identity},
    {"", "Dropout", k_dropout},
    // element-wise binary and variadic
    {"", "Add", k_binary},
    {"", "Sub", k_binary},
    {"", "Mul", k_binary},
    {"", "Div", k_binary},
    {"", "Pow", k_binary},
    {"", "Sum", k_variadic},
    {"", "Max", k_variadic},
    {"", "Min", k_variadic},
    {"", "Mean", k_variadic},
    {"", "Equal", k_compare},
    {"", "Less", k_compare},
    {"", "Greater", k_compare},
    {"", "LessOrEqual", k_compare},
    {"", "GreaterOrEqual", k_compare},
    {"", "And", k_compare},
    {"", "Or", k_compare},
    {"", "Xor", k_compare},
    {"", "Where", k_where},
    // linear algebra, convolution, pooling, normalisation
    {"", "MatMul", k_matmul},
    {"", "Gemm", k_gemm},
    {"", "Conv", k_conv},
    {"", "MaxPool", k_max_pool},
    {"", "AveragePool", k_average_pool},
    {"", "GlobalAveragePool", k_global_average_pool},
    {"", "GlobalMaxPool", k_global_max_pool},
    {"", "BatchNormalization", k_batch_norm},
    {"", "LayerNormalization", k_layer_norm},
    {"", "Softmax", k_softmax},
    {"", "LogSoftmax", k_softmax},
    // reductions
    {"", "ReduceMean", k_reduce},
    {"", "ReduceSum", k_reduce},
    {"", "ReduceMax", k_reduce},
    {"", "ReduceMin", k_reduce},
    // data movement
    {"", "Transpose", k_transpose},
    {"", "Reshape", k_reshape},
    {"", "Flatten", k_flatten},
    {"", "Squeeze", k_squeeze},
    {"", "Unsqueeze", k_unsqueeze},
    {"", "Concat", k_concat},
    {"", "Split", k_split},
    {"", "Slice", k_slice},
    {"", "Pad", k_pad},
    {"", "Expand", k_expand},
    {"", "Tile", k_tile},
    {"", "Range", k_range},
    {"", "ConstantOfShape", k_constant_of_shape},
    {"", "Constant", k_constant},
    {"", "Shape", k_shape},
    {"", "Gather", k_gather},
    // recurrent
    {"", "LSTM", k_lstm},
    {"", "GRU", k_gru},
    {"", "RNN", k_rnn},
    // ai.planner: backward
    {"ai.planner", "LossGrad", k_loss_grad},
    {"ai.planner", "ConvGradData", k_conv_grad_data},
    {"ai.planner", "ConvGradFilter", k_conv_grad_filter},
    {"ai.planner", "UnaryGrad", k_unary_grad},
    {"ai.planner", "DivGradB", k_div_grad_b},
    {"ai.planner", "WhereGrad", k_where_grad},
    {"ai.planner", "ReduceGrad", k_reduce_grad},
    {"ai.planner", "GlobalPoolGrad", k_global_pool_grad},
    {"ai.planner", "PoolGrad", k_pool_grad},
    {"ai.planner", "SoftmaxGrad", k_softmax_grad},
    {"ai.planner", "LayerNormGrad", k_layer_norm_grad},
    {"ai.planner", "LayerNormParamGrad", k_layer_norm_param_grad},
    {"ai.planner", "BatchNormGrad", k_batch_norm_grad},
    {"ai.planner", "BatchNormParamGrad", k_batch_norm_param_grad},
    {"ai.planner", "SliceGrad", k_slice_grad},
    {"ai.planner", "PadGrad", k_pad_grad},
    {"ai.planner", "GatherGrad", k_gather_grad},
    {"ai.planner", "LSTMGradData", k_lstm_grad_data},
    {"ai.planner", "LSTMGradWeights", k_lstm_grad_weights},
    {"ai.planner", "GRUGrad", k_gru_grad},
    {"ai.planner", "RNNGrad", k_rnn_grad},
    {"ai.planner", "ZerosLike", k_zeros_like},
    // ai.planner: optimizers
    {"ai.planner", "SGD", k_sgd},
    {"ai.planner", "Momentum", k_momentum},
    {"ai.planner", "Adam", k_adam},
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

void run_kernel(std::string_view domain, std::string_view op_type, const Attributes& attrs,
                std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                std::string_view node) {
  std::call_once(blas_once, [] { set_blas_threads(1); });
  const Entry* e = find(domain, op_type);
  KernelContext ctx{op_type, node, attrs, inputs, outputs};
  if (!e) {
    std::string msg =
        "no kernel for operator '" +
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
  e->fn(ctx);
}

}  // namespace planner::rt
