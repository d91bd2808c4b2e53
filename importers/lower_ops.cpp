// InstanceNormalization and integer-factor nearest Resize as compositions of described operators.
#include "importers/lower_ops.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace planner::importers {
namespace {

std::string fresh_name(const ir::Graph& g, const std::string& base) {
  std::string name = base;
  for (int n = 1; g.find_tensor(name) || g.find_op(name); ++n) name = fmt::format("{}.{}", base, n);
  return name;
}

// The bytes of `count` copies of `value` in a floating-point dtype (f32, f64, f16 or bf16).
std::optional<std::vector<uint8_t>> filled(ir::DType dtype, int64_t count, double value) {
  std::vector<uint8_t> one;
  auto put = [&](const auto v) {
    one.resize(sizeof(v));
    std::memcpy(one.data(), &v, sizeof(v));
  };
  if (dtype == ir::DType::kFloat32)
    put(static_cast<float>(value));
  else if (dtype == ir::DType::kFloat64)
    put(value);
  else if (dtype == ir::DType::kFloat16 && (value == 0 || value == 1))
    put(static_cast<uint16_t>(value == 1 ? 0x3C00 : 0));
  else if (dtype == ir::DType::kBFloat16 && (value == 0 || value == 1))
    put(static_cast<uint16_t>(value == 1 ? 0x3F80 : 0));
  else
    return std::nullopt;
  std::vector<uint8_t> bytes;
  bytes.reserve(one.size() * static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) bytes.insert(bytes.end(), one.begin(), one.end());
  return bytes;
}

ir::TensorId constant(ir::Graph& g, const std::string& base, ir::DType dtype,
                      std::vector<int64_t> shape, std::vector<uint8_t> data) {
  ir::Tensor t;
  t.name = fresh_name(g, base);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.role = ir::TensorRole::kConstant;
  t.data = std::move(data);
  return g.add_tensor(std::move(t));
}

ir::TensorId shape_constant(ir::Graph& g, const std::string& base,
                            const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return constant(g, base, ir::DType::kInt64, {static_cast<int64_t>(values.size())},
                  std::move(bytes));
}

ir::TensorId activation(ir::Graph& g, const std::string& base, ir::DType dtype,
                        std::vector<int64_t> shape) {
  ir::Tensor t;
  t.name = fresh_name(g, base);
  t.dtype = dtype;
  t.shape = std::move(shape);
  return g.add_tensor(std::move(t));
}

void add(ir::Graph& g, const std::string& base, const char* type, std::vector<ir::TensorId> ins,
         ir::TensorId out, std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Op op;
  op.name = fresh_name(g, base);
  op.op_type = type;
  op.inputs = std::move(ins);
  op.outputs = {out};
  op.attributes = std::move(attrs);
  g.add_op(std::move(op));
}

// Whether tensor t is a constant whose every element is `value`, or a Cast or CastLike of one
// (importers/opset18.h makes GroupNormalization's ones in the input's type with CastLike).
bool all_equal(const ir::Graph& g, ir::TensorId t, double value) {
  if (const ir::OpId p = g.tensor(t).producer; p != ir::kNoOp) {
    const ir::Op& cast = g.op(p);
    if (cast.domain.empty() && (cast.op_type == "Cast" || cast.op_type == "CastLike"))
      t = cast.inputs[0];
  }
  const ir::Tensor& tensor = g.tensor(t);
  if (tensor.role != ir::TensorRole::kConstant || !tensor.has_data()) return false;
  for (double v : tensor.float_values())
    if (v != value) return false;
  return true;
}

Expected<void> lower_instance_norm(ir::Graph& g, ir::OpId id, const std::string& source) {
  const ir::Op node = g.op(id);  // a copy: adding ops moves the graph's storage
  auto error = [&](const std::string& what) {
    return make_error("{}: node '{}' (InstanceNormalization): {}", source, node.name, what);
  };
  if (node.inputs.size() != 3 || node.outputs.empty() || node.outputs[0] == ir::kNoTensor)
    return error("expected 3 inputs (input, scale, B) and one output");
  for (ir::TensorId t : node.inputs)
    if (t == ir::kNoTensor) return error("expected 3 inputs (input, scale, B) and one output");
  const ir::Tensor x = g.tensor(node.inputs[0]);
  if (x.rank() < 3)
    return error(
        fmt::format("input has shape {}: expected [N, C, D1, ...]", ir::shape_to_string(x.shape)));
  const std::vector<int64_t> rows(x.shape.begin() + 2, x.shape.end());
  int64_t count = 1;
  for (int64_t d : rows) count *= d;
  auto ones = filled(x.dtype, count, 1);
  auto zeros = filled(x.dtype, count, 0);
  if (!ones || !zeros) return error(fmt::format("unsupported type {}", ir::dtype_name(x.dtype)));
  const bool affine = !all_equal(g, node.inputs[1], 1) || !all_equal(g, node.inputs[2], 0);
  const ir::TensorId y = node.outputs[0];
  const ir::TensorId normed = affine ? activation(g, node.name + ":normed", x.dtype, x.shape) : y;
  ir::Op& ln = g.op(id);
  ln.op_type = "LayerNormalization";
  ln.inputs = {node.inputs[0], constant(g, node.name + ":ones", x.dtype, rows, std::move(*ones)),
               constant(g, node.name + ":zeros", x.dtype, rows, std::move(*zeros))};
  ln.outputs = {normed};
  ln.attributes = {{"axis", ir::Attribute{int64_t{2}}},
                   {"epsilon", ir::Attribute{node.float_attr("epsilon", 1e-5)}}};
  if (!affine) return {};
  // y = normed * scale[c] + B[c], with scale and B viewed as [C, 1, ...].
  std::vector<int64_t> per_channel(static_cast<size_t>(x.rank() - 1), 1);
  per_channel[0] = x.shape[1];
  const ir::TensorId view = shape_constant(g, node.name + ":channel_shape", per_channel);
  const ir::TensorId scale = activation(g, node.name + ":scale", x.dtype, per_channel);
  const ir::TensorId bias = activation(g, node.name + ":bias", x.dtype, per_channel);
  const ir::TensorId scaled = activation(g, node.name + ":scaled", x.dtype, x.shape);
  add(g, node.name + "/scale", "Reshape", {node.inputs[1], view}, scale);
  add(g, node.name + "/bias", "Reshape", {node.inputs[2], view}, bias);
  add(g, node.name + "/mul", "Mul", {normed, scale}, scaled);
  add(g, node.name + "/add", "Add", {scaled, bias}, y);
  return {};
}

// The integer factor of each dimension when Resize `op` repeats every input element f times
// along it (nearest mode with an exact coordinate rule), else nothing.
std::optional<std::vector<int64_t>> repeat_factors(const ir::Graph& g, const ir::Op& op) {
  if (op.inputs.empty() || op.inputs[0] == ir::kNoTensor || op.outputs.empty() ||
      op.outputs[0] == ir::kNoTensor)
    return {};
  if (op.string_attr("mode", "nearest") != "nearest") return {};
  const std::string coords = op.string_attr("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = op.string_attr("nearest_mode", "round_prefer_floor");
  const bool exact = (coords == "asymmetric" && rounding == "floor") ||
                     ((coords == "half_pixel" || coords == "pytorch_half_pixel") &&
                      (rounding == "round_prefer_floor" || rounding == "round_prefer_ceil"));
  if (!exact || op.int_attr("exclude_outside", 0) != 0) return {};
  if (op.attribute("axes")) return {};  // opset 18's axes: left to a kernel
  const ir::Tensor& x = g.tensor(op.inputs[0]);
  const ir::Tensor& y = g.tensor(op.outputs[0]);
  if (x.rank() != y.rank()) return {};
  std::vector<int64_t> f(x.shape.size(), 1);
  bool any = false;
  for (size_t d = 0; d < f.size(); ++d) {
    if (x.shape[d] <= 0 || y.shape[d] % x.shape[d] != 0) return {};
    f[d] = y.shape[d] / x.shape[d];
    any = any || f[d] > 1;
  }
  if (!any) return {};
  return f;
}

void lower_resize(ir::Graph& g, ir::OpId id, const std::vector<int64_t>& factors) {
  const ir::Op node = g.op(id);
  const ir::Tensor x = g.tensor(node.inputs[0]);
  std::vector<int64_t> unit, wide;
  for (size_t d = 0; d < factors.size(); ++d) {
    unit.push_back(x.shape[d]);
    wide.push_back(x.shape[d]);
    if (factors[d] > 1) {
      unit.push_back(1);
      wide.push_back(factors[d]);
    }
  }
  const ir::TensorId spread = activation(g, node.name + ":units", x.dtype, unit);
  const ir::TensorId repeated = activation(g, node.name + ":repeated", x.dtype, wide);
  add(g, node.name + "/units", "Reshape",
      {node.inputs[0], shape_constant(g, node.name + ":unit_shape", unit)}, spread);
  add(g, node.name + "/repeat", "Expand",
      {spread, shape_constant(g, node.name + ":repeat_shape", wide)}, repeated);
  ir::Op& merge = g.op(id);
  merge.op_type = "Reshape";
  merge.attributes.clear();
  merge.inputs = {repeated,
                  shape_constant(g, node.name + ":shape", g.tensor(node.outputs[0]).shape)};
  merge.outputs = {node.outputs[0]};
}

// The sorted, non-negative axes of a reduction given as an attribute or a constant input, if
// they are two or more adjacent axes other than the spatial pair [2, 3] of a rank-4 tensor
// (the one multi-axis form the library describes).
std::optional<std::vector<int64_t>> merged_axes(const ir::Graph& g, const ir::Op& op) {
  static const std::set<std::string> kReductions = {"ReduceMean", "ReduceSum", "ReduceMax",
                                                    "ReduceMin"};
  if (!kReductions.count(op.op_type) || op.inputs.empty() || op.inputs[0] == ir::kNoTensor ||
      op.outputs.empty() || op.outputs[0] == ir::kNoTensor)
    return {};
  std::vector<int64_t> axes;
  if (op.attribute("axes")) {
    axes = op.ints_attr("axes");
  } else if (op.inputs.size() > 1 && op.inputs[1] != ir::kNoTensor) {
    const ir::Tensor& a = g.tensor(op.inputs[1]);
    if (a.role != ir::TensorRole::kConstant || !a.has_data()) return {};
    axes = a.int_values();
  }
  const int64_t rank = g.tensor(op.inputs[0]).rank();
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return {};
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (axes.size() < 2 || std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return {};
  if (axes.back() - axes.front() + 1 != static_cast<int64_t>(axes.size())) return {};
  if (rank == 4 && axes == std::vector<int64_t>{2, 3}) return {};
  return axes;
}

// A reduction over adjacent axes [a, b] as Reshape (the axes merged into one) -> the same
// reduction over axis a -> Reshape (keepdims' unit dimensions), exactly the same values.
void lower_merged_reduction(ir::Graph& g, ir::OpId id, const std::vector<int64_t>& axes) {
  const ir::Op node = g.op(id);
  const ir::Tensor x = g.tensor(node.inputs[0]);
  const ir::TensorId y = node.outputs[0];
  const std::vector<int64_t> y_shape = g.tensor(y).shape;
  const size_t a = static_cast<size_t>(axes.front()), b = static_cast<size_t>(axes.back());
  std::vector<int64_t> merged(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(a));
  int64_t extent = 1;
  for (size_t d = a; d <= b; ++d) extent *= x.shape[d];
  merged.push_back(extent);
  merged.insert(merged.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(b) + 1, x.shape.end());
  const bool keep = node.int_attr("keepdims", 1) != 0;
  std::vector<int64_t> reduced = merged;
  if (keep)
    reduced[a] = 1;
  else
    reduced.erase(reduced.begin() + static_cast<std::ptrdiff_t>(a));
  const ir::TensorId flat = activation(g, node.name + ":merged", x.dtype, merged);
  add(g, node.name + "/merge", "Reshape",
      {node.inputs[0], shape_constant(g, node.name + ":merged_shape", merged)}, flat);
  const bool reshape_back = reduced != y_shape;
  const ir::TensorId r = reshape_back ? activation(g, node.name + ":reduced", x.dtype, reduced) : y;
  ir::Op& op = g.op(id);
  op.inputs[0] = flat;
  if (op.attribute("axes"))
    op.attributes["axes"] = ir::Attribute{std::vector<int64_t>{axes.front()}};
  else
    op.inputs[1] = shape_constant(g, node.name + ":axis", {axes.front()});
  op.outputs[0] = r;
  if (reshape_back)
    add(g, node.name + "/unmerge", "Reshape", {r, shape_constant(g, node.name + ":shape", y_shape)},
        y);
}

// SoftmaxCrossEntropyLoss as its ONNX function body: LogSoftmax over the classes (axis 1),
// then NegativeLogLikelihoodLoss with the same reduction, ignore_index and weights; the
// optional log_prob output is the LogSoftmax's.
void lower_softmax_cross_entropy(ir::Graph& g, ir::OpId id) {
  const ir::Op node = g.op(id);
  const ir::Tensor scores = g.tensor(node.inputs[0]);
  const bool keep_log_prob = node.outputs.size() > 1 && node.outputs[1] != ir::kNoTensor;
  const ir::TensorId log_prob =
      keep_log_prob ? node.outputs[1]
                    : activation(g, node.name + ":log_prob", scores.dtype, scores.shape);
  add(g, node.name + "/log_softmax", "LogSoftmax", {node.inputs[0]}, log_prob,
      {{"axis", ir::Attribute{int64_t{1}}}});
  ir::Op& nll = g.op(id);
  nll.op_type = "NegativeLogLikelihoodLoss";
  nll.inputs[0] = log_prob;
  nll.outputs = {node.outputs[0]};
}

ir::TensorId scalar_constant(ir::Graph& g, const std::string& base, ir::DType dtype, double value) {
  std::vector<uint8_t> bytes;
  auto put = [&](const auto v) {
    bytes.resize(sizeof v);
    std::memcpy(bytes.data(), &v, sizeof v);
  };
  if (dtype == ir::DType::kInt64)
    put(static_cast<int64_t>(value));
  else if (dtype == ir::DType::kInt32)
    put(static_cast<int32_t>(value));
  else if (dtype == ir::DType::kFloat64)
    put(value);
  else
    put(static_cast<float>(value));  // losses are f32 (NLL's kernel checks)
  return constant(
      g, base,
      dtype == ir::DType::kInt64 || dtype == ir::DType::kInt32 || dtype == ir::DType::kFloat64
          ? dtype
          : ir::DType::kFloat32,
      {}, std::move(bytes));
}

// NegativeLogLikelihoodLoss with reduction `mean` as the loss summed, divided by the weights of
// the targets counted (a constant when every target counts with weight 1): both sums split
// along the samples as reductions, so data parallelism adds two scalars per step, as a framework
// averaging its ranks' losses does, instead of gathering every sample's log-probabilities.
void lower_nll_mean(ir::Graph& g, ir::OpId id) {
  const ir::Op node = g.op(id);
  const ir::Tensor target = g.tensor(node.inputs[1]);
  const ir::DType dtype = g.tensor(node.outputs[0]).dtype;
  const bool weighted = node.inputs.size() > 2 && node.inputs[2] != ir::kNoTensor;
  const ir::Attribute* ignore_attr = node.attribute("ignore_index");
  const bool ignore = ignore_attr && ignore_attr->is_int();
  const ir::TensorId loss = node.outputs[0];
  const ir::TensorId sum = activation(g, node.name + ":sum", dtype, {});
  ir::Op& nll = g.op(id);
  nll.attributes["reduction"] = ir::Attribute{std::string("sum")};
  nll.outputs = {sum};
  ir::TensorId den;
  if (!weighted && !ignore) {
    den =
        scalar_constant(g, node.name + ":count", dtype, static_cast<double>(target.num_elements()));
  } else {
    // Per target: its class's weight (1 without weights), 0 where it is ignored.
    ir::TensorId counted = ir::kNoTensor, index = node.inputs[1];
    if (ignore) {
      const ir::TensorId skip =
          scalar_constant(g, node.name + ":ignore_index", target.dtype,
                          static_cast<double>(node.int_attr("ignore_index", 0)));
      counted = activation(g, node.name + ":ignored", ir::DType::kBool, target.shape);
      add(g, node.name + "/ignored", "Equal", {node.inputs[1], skip}, counted);
      // An ignored target may lie outside the classes (PyTorch's -100): gathered as class 0.
      index = activation(g, node.name + ":index", target.dtype, target.shape);
      add(g, node.name + "/index", "Where",
          {counted, scalar_constant(g, node.name + ":zero_index", target.dtype, 0), node.inputs[1]},
          index);
    }
    ir::TensorId w = ir::kNoTensor;
    if (weighted) {
      w = activation(g, node.name + ":target_weight", dtype, target.shape);
      add(g, node.name + "/target_weight", "Gather", {node.inputs[2], index}, w);
    }
    const ir::TensorId one = scalar_constant(g, node.name + ":one", dtype, 1);
    const ir::TensorId zero = scalar_constant(g, node.name + ":zero", dtype, 0);
    ir::TensorId per_target = w;
    if (ignore) {
      per_target = activation(g, node.name + ":counted", dtype, target.shape);
      add(g, node.name + "/counted", "Where", {counted, zero, weighted ? w : one}, per_target);
    }
    // Summed as one row (the samples outermost, so a split of the samples stays contiguous):
    // the library describes all-axes reductions up to rank 4, targets may have more.
    const ir::TensorId row = activation(g, node.name + ":row", dtype, {target.num_elements()});
    add(g, node.name + "/row", "Reshape",
        {per_target, shape_constant(g, node.name + ":row_shape", {target.num_elements()})}, row);
    den = activation(g, node.name + ":weights", dtype, {});
    add(g, node.name + "/weights", "ReduceSum", {row}, den,
        {{"keepdims", ir::Attribute{int64_t{0}}}});
  }
  add(g, node.name + "/mean", "Div", {sum, den}, loss);
}

}  // namespace

Expected<void> lower_ops(ir::Graph& graph, const std::string& source) {
  bool changed = false;
  const int ops = graph.num_ops();
  for (ir::OpId id = 0; id < ops; ++id) {
    const ir::Op& op = graph.op(id);
    if (!op.domain.empty()) continue;
    if (op.op_type == "InstanceNormalization") {
      PLANNER_TRY(lower_instance_norm(graph, id, source));
      changed = true;
    } else if (op.op_type == "SoftmaxCrossEntropyLoss" && op.inputs.size() >= 2 &&
               op.inputs[0] != ir::kNoTensor && op.inputs[1] != ir::kNoTensor &&
               !op.outputs.empty() && op.outputs[0] != ir::kNoTensor &&
               graph.tensor(op.inputs[0]).rank() >= 2) {
      lower_softmax_cross_entropy(graph, id);
      if (graph.op(id).string_attr("reduction", "mean") == "mean") lower_nll_mean(graph, id);
      changed = true;
    } else if (op.op_type == "NegativeLogLikelihoodLoss" &&
               op.string_attr("reduction", "mean") == "mean" && op.inputs.size() >= 2 &&
               op.inputs[1] != ir::kNoTensor && !op.outputs.empty() &&
               op.outputs[0] != ir::kNoTensor) {
      lower_nll_mean(graph, id);
      changed = true;
    } else if (auto axes = merged_axes(graph, op)) {
      lower_merged_reduction(graph, id, *axes);
      changed = true;
    } else if (op.op_type == "Resize") {
      if (auto factors = repeat_factors(graph, op)) {
        lower_resize(graph, id, *factors);
        changed = true;
      }
    }
  }
  if (!changed) return {};
  return graph.finalize(source);
}

}  // namespace planner::importers
