// FLOP counting rules per operator type.
//
// The counts follow the usual conventions (a multiply-add is 2 FLOPs; an element-wise op is one
// FLOP per output element, transcendental functions included); they feed a roofline cost model
// whose efficiency factors absorb the differences between these counts and real kernels.
#include "ir/op_stats.h"

#include <algorithm>
#include <limits>
#include <string_view>

namespace planner::ir {
namespace {

int64_t elements(const Graph& g, TensorId id) {
  return id == kNoTensor ? 0 : g.tensor(id).num_elements();
}

int64_t dim(const Tensor& t, int i) {
  if (i < 0) i += t.rank();
  return (i >= 0 && i < t.rank()) ? t.shape[static_cast<size_t>(i)] : 1;
}

// a + b, or INT64_MAX when the sum overflows: byte and element totals are statistics, and a
// huge (shrunk or hostile) model must show as huge, never as a negative size.
int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

bool in(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Fused attention (tdl/ops/attention.tdl): the forward pass is two products over the query x
// key pairs a causal mask leaves (Q K^T, then P V) and a softmax; the backward pass
// recomputes the scores and runs four more products (dV, dP, dQ, dK), as FlashAttention does.
double attention_flops(const Graph& g, const Op& op) {
  const bool grad = op.op_type == "AttentionGrad";
  const size_t q = grad ? 1 : 0;
  if (op.inputs.size() < q + 3) return 0.0;
  const Tensor& qt = g.tensor(op.inputs[q]);
  const Tensor& kt = g.tensor(op.inputs[q + 1]);
  const Tensor& vt = g.tensor(op.inputs[q + 2]);
  if (qt.rank() < 2 || kt.rank() < 2 || vt.rank() < 2) return 0.0;
  const int64_t s = dim(qt, -2), t = dim(kt, -2);
  const double d = static_cast<double>(dim(qt, -1)), e = static_cast<double>(dim(vt, -1));
  double rows = 1;  // the leading dimensions: batch x heads
  for (int i = 0; i + 2 < qt.rank(); ++i)
    rows *= static_cast<double>(qt.shape[static_cast<size_t>(i)]);
  double pairs = static_cast<double>(s) * static_cast<double>(t);
  if (op.int_attr("causal", 0) != 0) {
    // Query row r sees keys up to its own position: r + query_offset - key_offset + 1 of them.
    const int64_t shift = op.int_attr("query_offset", 0) - op.int_attr("key_offset", 0);
    pairs = 0;
    for (int64_t r = 0; r < s; ++r)
      pairs += static_cast<double>(std::clamp<int64_t>(r + shift + 1, 0, t));
  }
  const double per_pair = grad ? 2.0 * (3.0 * d + 2.0 * e) + 8.0 : 2.0 * (d + e) + 5.0;
  return rows * pairs * per_pair;
}

double count_flops(const Graph& g, const Op& op) {
  const std::string& type = op.op_type;
  auto in_t = [&](size_t i) -> const Tensor* {
    return i < op.inputs.size() && op.inputs[i] != kNoTensor ? &g.tensor(op.inputs[i]) : nullptr;
  };
  int64_t out_elems = op.outputs.empty() ? 0 : elements(g, op.outputs[0]);

  if (type == "MatMul" || type == "Gemm") {
    const Tensor* a = in_t(0);
    if (!a || a->rank() == 0) return static_cast<double>(out_elems);
    int64_t k = (type == "Gemm" && op.int_attr("transA", 0)) ? dim(*a, 0) : dim(*a, -1);
    double f = 2.0 * static_cast<double>(out_elems) * static_cast<double>(k);
    if (type == "Gemm" && in_t(2)) f += static_cast<double>(out_elems);
    return f;
  }
  if (type == "Conv" || type == "ConvTranspose") {
    const Tensor* x = in_t(0);
    const Tensor* w = in_t(1);
    if (!x || !w || w->rank() < 2) return static_cast<double>(out_elems);
    // Per output element: (C_in / group) * prod(kernel) multiply-adds. ConvTranspose does the
    // same work per input element.
    // In doubles: the products of large dimensions overflow int64.
    double per = static_cast<double>(w->shape[1]);
    for (int i = 2; i < w->rank(); ++i)
      per *= static_cast<double>(w->shape[static_cast<size_t>(i)]);
    double n = type == "Conv"
                   ? static_cast<double>(out_elems)
                   : static_cast<double>(x->num_elements()) * static_cast<double>(w->shape[1]);
    if (type == "ConvTranspose") per /= static_cast<double>(std::max<int64_t>(1, w->shape[1]));
    double f = 2.0 * n * per;
    if (in_t(2)) f += static_cast<double>(out_elems);
    return f;
  }
  if (type == "LSTM" || type == "GRU" || type == "RNN") {
    const Tensor* x = in_t(0);  // [seq, batch, input]
    const Tensor* w = in_t(1);  // [dirs, gates*hidden, input]
    const Tensor* r = in_t(2);  // [dirs, gates*hidden, hidden]
    if (!x || !w || !r || x->rank() != 3) return static_cast<double>(out_elems);
    double seq = static_cast<double>(x->shape[0]), batch = static_cast<double>(x->shape[1]);
    double gemm = 2.0 * seq * batch *
                  (static_cast<double>(w->num_elements()) + static_cast<double>(r->num_elements()));
    double hidden = static_cast<double>(dim(*r, -1)) * static_cast<double>(dim(*r, 0));
    double cell = (type == "LSTM" ? 10.0 : 8.0) * seq * batch * hidden;  // gates, tanh, products
    return gemm + cell;
  }
  if (in(type, {"MaxPool", "AveragePool", "LpPool"})) {
    auto kernel = op.ints_attr("kernel_shape");
    double k = 1;
    for (int64_t v : kernel) k *= static_cast<double>(v);
    return static_cast<double>(out_elems) * k;
  }
  if (in(type, {"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax",
                "ReduceMin", "ReduceProd", "ReduceL2", "ReduceSumSquare"})) {
    return static_cast<double>(elements(g, op.inputs.empty() ? kNoTensor : op.inputs[0]));
  }
  if (type == "Attention" || type == "AttentionGrad") return attention_flops(g, op);
  if (in(type, {"Softmax", "LogSoftmax"})) return 5.0 * static_cast<double>(out_elems);
  if (type == "LayerNormalization") return 8.0 * static_cast<double>(out_elems);
  if (type == "BatchNormalization") return 4.0 * static_cast<double>(out_elems);
  // Training-mode batch norm (importers/training_ops.h): the statistics' sums of x and x^2 and
  // the parameter gradients' sums of dy and dy * xhat read every element of X.
  if (in(type, {"BatchNormStats", "BatchNormTrainParamGrad"}))
    return 4.0 * static_cast<double>(elements(g, op.inputs.empty() ? kNoTensor : op.inputs[0]));
  if (type == "BatchNormTrain") return 4.0 * static_cast<double>(out_elems);
  if (type == "MatMulGradWeight" && op.inputs.size() == 2) {  // A^T dY: 2 * rows * K * N
    const Tensor& dy = g.tensor(op.inputs[1]);
    const double n =
        dy.shape.empty() ? 1.0 : static_cast<double>(std::max<int64_t>(1, dy.shape.back()));
    return 2.0 * static_cast<double>(dy.num_elements()) / n * static_cast<double>(out_elems);
  }
  if (type == "MatMulTransB" && op.inputs.size() == 2) {  // A B^T: 2 * rows * K * N
    const Tensor& b = g.tensor(op.inputs[1]);
    return 2.0 * static_cast<double>(out_elems) *
           static_cast<double>(b.shape.size() == 2 ? b.shape[1] : 1);
  }
  if (type == "BatchNormTrainGrad") return 8.0 * static_cast<double>(out_elems);
  if (in(type,
         {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat", "Split",
          "Slice", "Gather", "Pad", "Cast", "Expand", "Tile", "Shape", "Constant", "Dropout"}))
    return 0.0;  // data movement only
  return static_cast<double>(out_elems);
}

}  // namespace

OpStats op_stats(const Graph& graph, OpId id) {
  const Op& op = graph.op(id);
  OpStats s;
  s.flops = count_flops(graph, op);
  for (TensorId t : op.inputs)
    if (t != kNoTensor) s.bytes_read = saturating_add(s.bytes_read, graph.tensor(t).num_bytes());
  for (TensorId t : op.outputs)
    if (t != kNoTensor)
      s.bytes_written = saturating_add(s.bytes_written, graph.tensor(t).num_bytes());
  return s;
}

GraphStats graph_stats(const Graph& graph) {
  GraphStats s;
  s.num_ops = graph.num_ops();
  for (const Tensor& t : graph.tensors()) {
    if (t.role == TensorRole::kParameter) {
      s.parameter_count = saturating_add(s.parameter_count, t.num_elements());
      s.parameter_bytes = saturating_add(s.parameter_bytes, t.num_bytes());
    }
  }
  for (TensorId t : graph.inputs)
    s.input_bytes = saturating_add(s.input_bytes, graph.tensor(t).num_bytes());
  for (OpId id = 0; id < graph.num_ops(); ++id) {
    const Op& op = graph.op(id);
    s.forward_flops += op_stats(graph, id).flops;
    s.op_counts[op.domain.empty() ? op.op_type : op.domain + "." + op.op_type]++;
    for (TensorId t : op.outputs)
      if (t != kNoTensor)
        s.activation_bytes = saturating_add(s.activation_bytes, graph.tensor(t).num_bytes());
  }
  return s;
}

}  // namespace planner::ir
