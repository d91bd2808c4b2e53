// Native shard kernels: per-op rules, attribute rewriting and the shape check that guards them.
#include "analysis/shard_kernel.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "importers/shape_rules.h"

namespace planner::analysis {

namespace {

std::vector<int64_t> box_shape(const Box& b) {
  std::vector<int64_t> s;
  for (const Range& r : b) s.push_back(r.size());
  return s;
}

bool whole_on(const Box& b, const std::vector<int64_t>& shape, size_t dim) {
  return dim >= b.size() || (b[dim].begin == 0 && b[dim].end == shape[dim]);
}

bool is_whole(const Box& b, const std::vector<int64_t>& shape) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (!whole_on(b, shape, d)) return false;
  return true;
}

// A box is one run of memory in row-major order when every dim before some d holds one index
// and every dim after d is whole. Returns (first element, count) or nullopt.
std::optional<std::pair<int64_t, int64_t>> flat_run(const Box& b,
                                                    const std::vector<int64_t>& shape) {
  size_t d = 0;
  while (d < b.size() && b[d].size() == 1) ++d;
  for (size_t e = d + 1; e < b.size(); ++e)
    if (!whole_on(b, shape, e)) return std::nullopt;
  int64_t offset = 0, stride = 1, count = 1;
  for (size_t i = b.size(); i-- > 0;) {
    offset += b[i].begin * stride;
    stride *= shape[i];
    count *= b[i].size();
  }
  return std::make_pair(offset, count);
}

// Whether a reshape from `in_shape` to `out_shape` maps the shard's input box onto its output
// box as a local reshape would. The shapes fall into groups of dimensions with equal products
// (as tdl's reshape remap groups them); within each group both boxes must be one contiguous
// run of the group's row-major positions (single indices, then any range, then whole
// dimensions) and the two runs the same. A batch split k ways that a reshape merges as the
// outer factor ([S, B, E] -> [S, B*H, D]) passes as k contiguous pieces of the merged dimension.
bool reshape_groups_match(const Box& in_box, const std::vector<int64_t>& in_shape,
                          const Box& out_box, const std::vector<int64_t>& out_shape) {
  std::vector<size_t> in_dims, out_dims;
  for (size_t i = 0; i < in_shape.size(); ++i)
    if (in_shape[i] != 1) in_dims.push_back(i);
  for (size_t j = 0; j < out_shape.size(); ++j)
    if (out_shape[j] != 1) out_dims.push_back(j);
  // The run [first, first + count) a box covers within one group's dims, or nullopt.
  auto run = [](const Box& b, const std::vector<int64_t>& shape,
                const std::vector<size_t>& dims) -> std::optional<std::pair<int64_t, int64_t>> {
    size_t k = 0;
    while (k < dims.size() && b[dims[k]].size() == 1) ++k;
    for (size_t e = k + 1; e < dims.size(); ++e)
      if (!whole_on(b, shape, dims[e])) return std::nullopt;
    int64_t first = 0, count = 1;
    for (size_t e = 0; e < dims.size(); ++e) {
      first = first * shape[dims[e]] + b[dims[e]].begin;
      count *= b[dims[e]].size();
    }
    return std::make_pair(first, count);
  };
  size_t a = 0, c = 0;
  while (a < in_dims.size() || c < out_dims.size()) {
    std::vector<size_t> gi, go;
    int64_t pi = 1, po = 1;
    do {
      if (pi <= po && a < in_dims.size()) {
        gi.push_back(in_dims[a]);
        pi *= in_shape[in_dims[a++]];
      } else if (c < out_dims.size()) {
        go.push_back(out_dims[c]);
        po *= out_shape[out_dims[c++]];
      } else {
        return false;
      }
    } while (pi != po || gi.empty() || go.empty());
    auto ri = run(in_box, in_shape, gi), ro = run(out_box, out_shape, go);
    if (!ri || !ro || *ri != *ro) return false;
  }
  return true;
}

ir::Tensor int64_constant(const std::string& name, const std::vector<int64_t>& values) {
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kInt64;
  t.shape = {static_cast<int64_t>(values.size())};
  t.role = ir::TensorRole::kConstant;
  t.data.resize(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

const std::set<std::string> kOnnxNative = {
    // element-wise (broadcasting inputs arrive as their own boxes)
    "Abs", "Add", "And", "Cast", "CastLike", "Ceil", "Clip", "Cos", "Div", "Dropout", "Elu",
    "Equal", "Erf", "Exp", "Floor", "Gelu", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish",
    "Identity", "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Mean", "Min", "Mish", "Mul",
    "Neg", "Not", "Or", "Pow", "Reciprocal", "Relu", "Selu", "Sigmoid", "Sign", "Sin", "Softplus",
    "Softsign", "Sqrt", "Sub", "Sum", "Tanh", "Where", "Xor", "Tan", "Asin", "Acos", "Atan", "Sinh",
    "Cosh", "Asinh", "Acosh", "Atanh", "Celu", "ThresholdedRelu", "Shrink", "Round",
    // shape-checked: correct on slices whenever the local shapes come out right
    "ArgMax", "ArgMin", "BatchNormalization", "Concat", "Einsum", "GlobalAveragePool",
    "GlobalMaxPool", "GRU", "LayerNormalization", "LogSoftmax", "LSTM", "MatMul", "Gemm",
    "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum", "RNN", "Softmax", "Split", "Transpose",
    "TopK", "CumSum", "OneHot", "GatherElements", "NegativeLogLikelihoodLoss",
    // with rewritten attributes or shape inputs
    "AveragePool", "Conv", "Expand", "Flatten", "Gather", "MaxPool", "Pad", "Reshape", "Resize",
    "Slice", "Squeeze", "Unsqueeze"};

const std::set<std::string> kPlannerNative = {"Adam",
                                              "Attention",
                                              "AttentionGrad",
                                              "BatchNormGrad",
                                              "BatchNormParamGrad",
                                              "BatchNormRunningStats",
                                              "BatchNormStats",
                                              "BatchNormTrain",
                                              "BatchNormTrainGrad",
                                              "BatchNormTrainParamGrad",
                                              "ConvGradData",
                                              "ConvGradFilter",
                                              "DivGradB",
                                              "DropoutGrad",
                                              "DropoutTrain",
                                              "MatMulGradWeight",
                                              "MatMulTransB",
                                              "NLLLossGrad",
                                              "GatherElementsGrad",
                                              "TopKGrad",
                                              "GatherGrad",
                                              "GlobalPoolGrad",
                                              "GRUGrad",
                                              "LayerNormGrad",
                                              "LayerNormParamGrad",
                                              "LossGrad",
                                              "LSTMGradData",
                                              "LSTMGradWeights",
                                              "Momentum",
                                              "PadGrad",
                                              "PoolGrad",
                                              "ReduceGrad",
                                              "ResizeGrad",
                                              "RNNGrad",
                                              "SGD",
                                              "SliceGrad",
                                              "SoftmaxGrad",
                                              "UnaryGrad",
                                              "WhereGrad",
                                              "ZerosLike"};

const std::set<std::string> kOnnxPartial = {
    "MatMul",    "Gemm",      "Conv",   "ReduceSum",
    "ReduceMax", "ReduceMin", "Einsum", "NegativeLogLikelihoodLoss"};
const std::set<std::string> kPlannerPartial = {
    "ConvGradData",       "ConvGradFilter", "LayerNormParamGrad",
    "BatchNormParamGrad", "BatchNormStats", "BatchNormTrainParamGrad",
    "LSTMGradWeights",    "GatherGrad",     "MatMulGradWeight",
    "MatMulTransB",       "GRUGrad",        "RNNGrad"};

bool is_planner(const ir::Op& op) {
  return op.domain == "ai.planner";
}

// Spatial dims (2 ..) of node input `i` whole?
bool spatial_whole(const ShardRequest& r, size_t i) {
  const ir::Op& op = r.graph->op(r.op);
  if (i >= op.inputs.size() || op.inputs[i] == ir::kNoTensor) return true;
  const auto& shape = r.graph->tensor(op.inputs[i]).shape;
  for (size_t d = 2; d < shape.size(); ++d)
    if (!whole_on(r.input_boxes[i], shape, d)) return false;
  return true;
}

int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

// Conv/pool pads for the shard's input and output boxes along each spatial dim.
bool rewrite_pads(const ShardRequest& r, std::map<std::string, ir::Attribute>& attrs,
                  std::string& why) {
  const ir::Op& op = r.graph->op(r.op);
  const auto& xs = r.graph->tensor(op.inputs[0]).shape;
  const auto& ys = r.graph->tensor(op.outputs[0]).shape;
  size_t n = xs.size() - 2;
  std::string auto_pad = op.string_attr("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return why = "auto_pad " + auto_pad, false;
  std::vector<int64_t> kernel = op.ints_attr("kernel_shape");
  if (kernel.empty() && op.op_type == "Conv") {
    const auto& ws = r.graph->tensor(op.inputs[1]).shape;
    kernel.assign(ws.begin() + 2, ws.end());
  }
  if (kernel.size() != n) return why = "unknown kernel shape", false;
  std::vector<int64_t> pads = op.ints_attr("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> strides = op.ints_attr("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = op.ints_attr("dilations", std::vector<int64_t>(n, 1));
  if (pads.size() != 2 * n || strides.size() != n || dil.size() != n)
    return why = "bad pads", false;
  if (op.int_attr("ceil_mode", 0) != 0) return why = "ceil_mode", false;
  bool changed = false;
  for (size_t i = 0; i < n; ++i) {
    const Range& in = r.input_boxes[0][i + 2];
    const Range& out = r.output_boxes[0][i + 2];
    if (in.begin == 0 && in.end == xs[i + 2] && out.begin == 0 && out.end == ys[i + 2]) continue;
    int64_t eff = (kernel[i] - 1) * dil[i] + 1;
    int64_t pb = in.begin + pads[i] - out.begin * strides[i];
    int64_t pe = (out.size() - 1) * strides[i] + eff - in.size() - pb;
    if (pb < 0) return why = "halo does not cover the window", false;
    pads[i] = pb;
    pads[i + n] = std::max<int64_t>(pe, 0);
    changed = true;
  }
  if (changed) {
    attrs["pads"] = ir::Attribute{pads};
    attrs.erase("auto_pad");
  }
  return true;
}

bool rewrite_slice(const ShardRequest& r, ShardKernel& k, std::string& why) {
  const ir::Op& op = r.graph->op(r.op);
  const ir::Graph& g = *r.graph;
  const auto& xs = g.tensor(op.inputs[0]).shape;
  auto values = [&](size_t i) -> std::optional<std::vector<int64_t>> {
    if (i >= op.inputs.size() || op.inputs[i] == ir::kNoTensor) return std::vector<int64_t>{};
    const ir::Tensor& t = g.tensor(op.inputs[i]);
    if (!t.has_data()) return std::nullopt;
    return t.int_values();
  };
  auto starts = values(1), ends = values(2), axes = values(3), steps = values(4);
  if (op.inputs.size() < 3 || !starts || !ends || !axes || !steps)
    return why = "non-constant bounds", false;
  std::vector<int64_t> offset(xs.size(), 0);
  for (size_t j = 0; j < starts->size(); ++j) {
    int64_t axis = axes->empty() ? static_cast<int64_t>(j) : norm_axis((*axes)[j], xs.size());
    if (!steps->empty() && (*steps)[j] != 1) return why = "a step other than 1", false;
    int64_t dim = xs[static_cast<size_t>(axis)];
    int64_t s = (*starts)[j];
    if (s < 0) s += dim;
    offset[static_cast<size_t>(axis)] = std::clamp<int64_t>(s, 0, dim);
  }
  std::vector<int64_t> ls, le, la;
  for (size_t d = 0; d < xs.size(); ++d) {
    const Range& in = r.input_boxes[0][d];
    const Range& out = r.output_boxes[0][d];
    int64_t s = offset[d] + out.begin - in.begin;
    if (s < 0 || s + out.size() > in.size()) return why = "slice outside the shard's input", false;
    ls.push_back(s);
    le.push_back(s + out.size());
    la.push_back(static_cast<int64_t>(d));
  }
  k.inputs.resize(5);
  k.inputs[1] = {ShardInput::Kind::kConstant, {}, int64_constant("starts", ls)};
  k.inputs[2] = {ShardInput::Kind::kConstant, {}, int64_constant("ends", le)};
  k.inputs[3] = {ShardInput::Kind::kConstant, {}, int64_constant("axes", la)};
  k.inputs[4] = {ShardInput::Kind::kAbsent, {}, {}};
  return true;
}

// Constant integer input `i` of the op (empty when absent), or nullopt when not constant.
std::optional<std::vector<int64_t>> constant_ints(const ShardRequest& r, size_t i) {
  const ir::Op& op = r.graph->op(r.op);
  if (i >= op.inputs.size() || op.inputs[i] == ir::kNoTensor) return std::vector<int64_t>{};
  const ir::Tensor& t = r.graph->tensor(op.inputs[i]);
  if (!t.has_data()) return std::nullopt;
  return t.int_values();
}

// Per axis of a tensor of `shape`: whether a Slice (bounds from constant inputs starting at
// `first`, else Slice's opset-1 attributes) takes it whole with step 1 — in a form that stays
// whole on any smaller extent (start 0 or at most -extent, end at least the extent). nullopt
// when the bounds are not constants.
std::optional<std::vector<bool>> slice_whole_axes(const ShardRequest& r, size_t first,
                                                  const std::vector<int64_t>& shape) {
  const ir::Op& op = r.graph->op(r.op);
  std::optional<std::vector<int64_t>> starts, ends, axes, steps = std::vector<int64_t>{};
  if (first < op.inputs.size() && op.inputs[first] != ir::kNoTensor) {
    starts = constant_ints(r, first);
    ends = constant_ints(r, first + 1);
    axes = constant_ints(r, first + 2);
    steps = constant_ints(r, first + 3);
  } else {
    starts = op.ints_attr("starts");
    ends = op.ints_attr("ends");
    axes = op.ints_attr("axes");
  }
  if (!starts || !ends || !axes || !steps || ends->size() != starts->size()) return std::nullopt;
  std::vector<bool> whole(shape.size(), true);
  for (size_t j = 0; j < starts->size(); ++j) {
    int64_t axis = axes->empty()      ? static_cast<int64_t>(j)
                   : j < axes->size() ? norm_axis((*axes)[j], shape.size())
                                      : -1;
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) return std::nullopt;
    const int64_t dim = shape[static_cast<size_t>(axis)];
    const int64_t step = j < steps->size() ? (*steps)[j] : 1;
    const int64_t s = (*starts)[j], e = (*ends)[j];
    whole[static_cast<size_t>(axis)] = step == 1 && (s == 0 || s <= -dim) && e >= dim;
  }
  return whole;
}

// Per axis of the padded tensor: whether Pad's constant `pads` (input 1, over the axes of
// input 3 when given) leave it unpadded. nullopt when they are not constants.
std::optional<std::vector<bool>> unpadded_axes(const ShardRequest& r, size_t rank) {
  auto pads = constant_ints(r, 1), axes = constant_ints(r, 3);
  if (!pads || !axes) return std::nullopt;
  std::vector<int64_t> which = *axes;
  if (which.empty())
    for (size_t a = 0; a < rank; ++a) which.push_back(static_cast<int64_t>(a));
  if (pads->size() != 2 * which.size()) return std::nullopt;
  std::vector<bool> unpadded(rank, true);
  for (size_t j = 0; j < which.size(); ++j) {
    int64_t a = norm_axis(which[j], rank);
    if (a < 0 || a >= static_cast<int64_t>(rank)) return std::nullopt;
    if ((*pads)[j] != 0 || (*pads)[j + which.size()] != 0) unpadded[static_cast<size_t>(a)] = false;
  }
  return unpadded;
}

// Pad, SliceGrad and PadGrad are element-wise along an axis they leave untouched: a shard
// split only along such axes reads the same range of its data input (input 0, of the same
// extent there) and the whole of every other axis; the pads and bounds stay as they are.
bool untouched_axes_split(const ShardRequest& r, const std::optional<std::vector<bool>>& untouched,
                          ShardKernel& k, std::string& why) {
  const ir::Op& op = r.graph->op(r.op);
  if (!untouched) return why = "non-constant pads or bounds", false;
  const auto& xs = r.graph->tensor(op.inputs[0]).shape;
  const auto& ys = r.graph->tensor(op.outputs[0]).shape;
  if (xs.size() != ys.size() || untouched->size() != ys.size()) return why = "ranks differ", false;
  Box in;
  for (size_t d = 0; d < ys.size(); ++d) {
    if (whole_on(r.output_boxes[0], ys, d)) {
      in.push_back({0, xs[d]});
      continue;
    }
    if (!(*untouched)[d] || xs[d] != ys[d])
      return why = fmt::format("split along axis {}, which it pads or slices", d), false;
    in.push_back(r.output_boxes[0][d]);
  }
  k.inputs[0].box = std::move(in);
  return true;
}

// The rule of a planner-domain op; false (with why) when the shard cannot run natively.
// Resize (and its gradient, `grad`: dY in, dX out) on a shard: every split axis keeps its extent
// (scale 1) and its box on both sides; the kernel's `sizes` (the forward's output shape) become
// the shard's, its `scales` hold as they are.
bool resize_split(const ShardRequest& r, ShardKernel& k, bool grad, std::string& why) {
  const ir::Graph& g = *r.graph;
  const ir::Op& op = g.op(r.op);
  const Box& small = grad ? r.output_boxes[0] : r.input_boxes[0];
  const Box& large = grad ? r.input_boxes[0] : r.output_boxes[0];
  const auto& xs = g.tensor(grad ? op.outputs[0] : op.inputs[0]).shape;
  const auto& ys = g.tensor(grad ? op.inputs[0] : op.outputs[0]).shape;
  for (size_t d = 0; d < ys.size() && d < xs.size(); ++d) {
    const bool split = !whole_on(large, ys, d) || !whole_on(small, xs, d);
    if (split && (xs[d] != ys[d] || !(small[d] == large[d]))) {
      why = "split along a resized axis";
      return false;
    }
  }
  if (op.inputs.size() > 3 && op.inputs[3] != ir::kNoTensor)
    k.inputs[3] = {ShardInput::Kind::kConstant, {}, int64_constant("sizes", box_shape(large))};
  return true;
}

bool planner_guard(const ShardRequest& r, std::string& why) {
  const ir::Op& op = r.graph->op(r.op);
  const ir::Graph& g = *r.graph;
  const std::string& t = op.op_type;
  auto in_shape = [&](size_t i) -> const std::vector<int64_t>& {
    return g.tensor(op.inputs[i]).shape;
  };
  auto present = [&](size_t i) { return i < op.inputs.size() && op.inputs[i] != ir::kNoTensor; };
  if (t == "ReduceGrad") {
    std::vector<int64_t> axes = op.ints_attr("axes");
    for (int64_t a : axes)
      if (!whole_on(r.input_boxes[1], in_shape(1),
                    static_cast<size_t>(norm_axis(a, in_shape(1).size()))))
        return why = "split along a reduced axis", false;
  } else if (t == "GlobalPoolGrad" || t == "PoolGrad") {
    if (!spatial_whole(r, 1)) return why = "spatial split", false;
  } else if (t == "ConvGradData" || t == "ConvGradFilter") {
    // ConvGradData reads (dY, W), ConvGradFilter (X, dY). dY whole along its spatial axes: the
    // shard is the whole op on a batch or channel slice. ConvGradFilter's X may read less than
    // all of its rows (a strided 1x1 convolution skips the last): native_shard_kernel then
    // hands it the whole rows, as the whole op has them.
    const size_t dy = t == "ConvGradData" ? 0 : 1;
    if (!spatial_whole(r, dy)) return why = "spatial split", false;
    if (t == "ConvGradData" && !spatial_whole(r, 1)) return why = "spatial split", false;
    const auto& os = g.tensor(op.outputs[0]).shape;
    for (size_t d = 2; d < os.size(); ++d)
      if (!whole_on(r.output_boxes[0], os, d)) return why = "spatial split", false;
    // A grouped convolution shards natively along the batch only: every channel whole.
    if (op.int_attr("group", 1) != 1) {
      const auto& w = t == "ConvGradData" ? in_shape(1) : os;
      const Box& wb = t == "ConvGradData" ? r.input_boxes[1] : r.output_boxes[0];
      const Box& xb = t == "ConvGradData" ? r.output_boxes[0] : r.input_boxes[0];
      const auto& xs = t == "ConvGradData" ? os : in_shape(0);
      if (!whole_on(r.input_boxes[dy], in_shape(dy), 1) || !whole_on(wb, w, 0) ||
          !whole_on(wb, w, 1) || !whole_on(xb, xs, 1))
        return why = "grouped convolution split along channels", false;
    }
  } else if (t == "LayerNormGrad" || t == "LayerNormParamGrad") {
    int64_t axis = norm_axis(op.int_attr("axis", -1), in_shape(1).size());
    for (size_t d = static_cast<size_t>(axis); d < in_shape(1).size(); ++d)
      if (!whole_on(r.input_boxes[1], in_shape(1), d))
        return why = "split along normalised axes", false;
  } else if (t == "Attention" || t == "AttentionGrad") {
    // Natively along the leading dimensions (batch, heads) and, forward, the query rows (the
    // shard is told where they start: query_offset) and the value columns. Other splits (the
    // gradient's rows or features) run whole.
    const bool forward = t == "Attention";
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (!present(i)) continue;
      const auto& s = in_shape(i);
      for (size_t d = s.size() >= 2 ? s.size() - 2 : 0; d < s.size(); ++d) {
        const bool rows = d + 2 == s.size(), last = d + 1 == s.size();
        const bool may_split = forward && (((i == 0 || i == 3) && rows) || (i == 2 && last));
        if (!may_split && !whole_on(r.input_boxes[i], s, d))
          return why = "attention split along keys or features", false;
      }
    }
    if (!forward)
      for (size_t o = 0; o < op.outputs.size(); ++o) {
        if (op.outputs[o] == ir::kNoTensor) continue;
        const auto& s = g.tensor(op.outputs[o]).shape;
        for (size_t d = s.size() >= 2 ? s.size() - 2 : 0; d < s.size(); ++d)
          if (!whole_on(r.output_boxes[o], s, d))
            return why = "attention gradient split along rows or features", false;
      }
  } else if (t == "SoftmaxGrad") {
    int64_t axis = norm_axis(op.int_attr("axis", -1), in_shape(0).size());
    if (!whole_on(r.input_boxes[0], in_shape(0), static_cast<size_t>(axis)) ||
        !whole_on(r.input_boxes[1], in_shape(1), static_cast<size_t>(axis)))
      return why = "split along the softmax axis", false;
  } else if (t == "GatherGrad") {
    const auto& os = g.tensor(op.outputs[0]).shape;
    int64_t axis = norm_axis(op.int_attr("axis", 0), os.size());
    if (!whole_on(r.output_boxes[0], os, static_cast<size_t>(axis)))
      return why = "split along the gather axis", false;
  } else if (t == "BatchNormStats" || t == "BatchNormRunningStats" || t == "BatchNormTrain" ||
             t == "BatchNormTrainParamGrad" || t == "BatchNormTrainGrad") {
    // The statistics [2, C] are computed and read as whole rows: a shard holds all of sum(x)
    // and sum(x^2) for its channels (partial over a batch or spatial split, which `count`,
    // the whole batch's elements per channel, already accounts for).
    const size_t stats_in = t == "BatchNormStats"            ? SIZE_MAX
                            : t == "BatchNormRunningStats"   ? 0
                            : t == "BatchNormTrainParamGrad" ? 2
                                                             : 3;
    if (stats_in != SIZE_MAX && !whole_on(r.input_boxes[stats_in], in_shape(stats_in), 0))
      return why = "split of the statistics' rows", false;
    if (t == "BatchNormStats" && !whole_on(r.output_boxes[0], g.tensor(op.outputs[0]).shape, 0))
      return why = "split of the statistics' rows", false;
  } else if (t == "MatMulTransB") {
    // A [..., K] and B [N, K]: one range of K.
    if (r.input_boxes[0].back() != r.input_boxes[1][1]) return why = "K ranges differ", false;
  } else if (t == "MatMulGradWeight") {
    // A [..., K] and dY [..., N]: one range of rows.
    const auto& a = r.input_boxes[0];
    const auto& b = r.input_boxes[1];
    if (a.size() != b.size() || !std::equal(a.begin(), a.end() - 1, b.begin()))
      return why = "row ranges differ", false;
  } else if (t == "LSTMGradData" || t == "GRUGrad" || t == "RNNGrad") {
    for (size_t i = 1; i <= 3; ++i)
      if (present(i) && !is_whole(r.input_boxes[i], in_shape(i)))
        return why = "split of the weights", false;
  } else if (t == "LSTMGradWeights") {
    // X [S, B, I], H [S, D, B, H], initial_h [D, B, H], dGates [S, D, B, 4H]: one batch range.
    auto batch = [&](size_t i, size_t d) { return r.input_boxes[i][d]; };
    if (present(1) && batch(1, 2) != batch(0, 1)) return why = "batch ranges differ", false;
    if (present(2) && batch(2, 1) != batch(0, 1)) return why = "batch ranges differ", false;
    if (present(3) && batch(3, 2) != batch(0, 1)) return why = "batch ranges differ", false;
    for (size_t o = 0; o < op.outputs.size(); ++o)
      if (op.outputs[o] != ir::kNoTensor &&
          !is_whole(r.output_boxes[o], g.tensor(op.outputs[o]).shape))
        return why = "split of the weights", false;
  }
  // The matrix products' own rules above decide: their inputs and output share a shape only
  // by coincidence (a square weight: d_model x d_model), which says nothing of their boxes.
  if (t == "MatMulTransB" || t == "MatMulGradWeight") return true;
  // Inputs of one shape (dY and X) are read at one box.
  for (size_t i = 0; i < op.inputs.size(); ++i)
    for (size_t j = i + 1; j < op.inputs.size(); ++j)
      if (present(i) && present(j) && in_shape(i) == in_shape(j) &&
          r.input_boxes[i] != r.input_boxes[j])
        return why = "inputs of one shape read at different boxes", false;
  // Element-wise consistency: an input of an output's full shape is read at the output's box.
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    if (op.outputs[o] == ir::kNoTensor) continue;
    const auto& os = g.tensor(op.outputs[o]).shape;
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (present(i) && in_shape(i) == os && r.input_boxes[i] != r.output_boxes[o] &&
          r.partial_index[o] < 0)
        return why = "input and output boxes differ", false;
  }
  return true;
}

// Runs the importer's shape rules on the shard's local shapes: every output must come out as
// its box.
bool shapes_match(const ShardRequest& r, const ShardKernel& k, std::string& why) {
  const ir::Op& orig = r.graph->op(r.op);
  ir::Op op = orig;
  op.attributes = k.attributes;
  std::vector<importers::PartialType> types(op.inputs.size());
  std::vector<const ir::Tensor*> values(op.inputs.size(), nullptr);
  std::vector<ir::Tensor> storage;
  storage.reserve(op.inputs.size());
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ShardInput& in = k.inputs[i];
    if (in.kind == ShardInput::Kind::kAbsent || op.inputs[i] == ir::kNoTensor) {
      op.inputs[i] = ir::kNoTensor;
      continue;
    }
    if (in.kind == ShardInput::Kind::kConstant) {
      types[i].dtype = in.constant.dtype;
      types[i].dims = in.constant.shape;
      values[i] = &in.constant;
      continue;
    }
    const ir::Tensor& t = r.graph->tensor(op.inputs[i]);
    types[i].dtype = t.dtype;
    types[i].dims = box_shape(in.box);
    if (t.has_data()) {
      ir::Tensor s = t;
      s.shape = box_shape(in.box);
      s.data = slice_data(t, in.box);
      storage.push_back(std::move(s));
      values[i] = &storage.back();
    }
  }
  auto out = importers::infer_output_types(op, types, values);
  if (!out) return why = "shape rule: " + out.error().message(), false;
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    if (op.outputs[o] == ir::kNoTensor) continue;
    if (o >= out->size() || !(*out)[o].is_static()) return why = "no shape rule", false;
    if (*(*out)[o].dims != box_shape(r.output_boxes[o]))
      return why = fmt::format("local output {} would be {}, not {}", o,
                               ir::shape_to_string(*(*out)[o].dims),
                               ir::shape_to_string(box_shape(r.output_boxes[o]))),
             false;
  }
  return true;
}

}  // namespace

std::vector<uint8_t> slice_data(const ir::Tensor& t, const Box& box) {
  size_t es = ir::dtype_size(t.dtype);
  if (is_whole(box, t.shape)) return t.data;
  std::vector<int64_t> shape = box_shape(box);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<uint8_t> out(static_cast<size_t>(n) * es);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d) src = src * t.shape[d] + box[d].begin + idx[d];
    std::memcpy(out.data() + static_cast<size_t>(e) * es,
                t.data.data() + static_cast<size_t>(src) * es, es);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

bool partial_sums_native(const ir::Op& op) {
  return is_planner(op) ? kPlannerPartial.count(op.op_type) > 0
                        : kOnnxPartial.count(op.op_type) > 0;
}

std::vector<std::string> native_op_types() {
  std::vector<std::string> out(kOnnxNative.begin(), kOnnxNative.end());
  for (const std::string& t : kPlannerNative) out.push_back("ai.planner." + t);
  return out;
}

std::optional<ShardKernel> native_shard_kernel(const ShardRequest& r, std::string& why) {
  const ir::Op& op = r.graph->op(r.op);
  const ir::Graph& g = *r.graph;
  ShardKernel k;
  k.attributes = op.attributes;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    ShardInput in;
    if (op.inputs[i] == ir::kNoTensor) {
      in.kind = ShardInput::Kind::kAbsent;
    } else {
      in.box = r.input_boxes[i];
      // A constant the description does not read (ReduceSum's axes, a shape): passed whole.
      const ir::Tensor& t = g.tensor(op.inputs[i]);
      if (t.has_data() && box_elements(in.box) == 0) {
        in.box.clear();
        for (int64_t d : t.shape) in.box.push_back({0, d});
      }
    }
    k.inputs.push_back(std::move(in));
  }
  if (!r.split) return k;

  const bool planner = is_planner(op);
  if (planner ? !kPlannerNative.count(op.op_type) : !kOnnxNative.count(op.op_type)) {
    why = "no native rule";
    return std::nullopt;
  }
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i] != ir::kNoTensor && box_elements(k.inputs[i].box) == 0 &&
        g.tensor(op.inputs[i]).num_elements() > 0) {
      why = "an input the shard does not read";
      return std::nullopt;
    }
  bool any_partial =
      std::any_of(r.partial_index.begin(), r.partial_index.end(), [](int p) { return p >= 0; });
  if (any_partial && !partial_sums_native(op)) {
    why = "partial results of a non-linear operator";
    return std::nullopt;
  }
  // Biases are added once: by partial 0.
  if (any_partial && (op.op_type == "Gemm" || op.op_type == "Conv") && !planner &&
      op.inputs.size() > 2 && r.partial_index[0] > 0)
    k.inputs[2].kind = ShardInput::Kind::kAbsent;

  if (planner) {
    if (op.op_type == "ResizeGrad") {
      if (!resize_split(r, k, true, why)) return std::nullopt;
      return k;
    }
    if (op.op_type == "SliceGrad" || op.op_type == "PadGrad") {
      const auto& xs = g.tensor(op.outputs[0]).shape;
      auto untouched =
          op.op_type == "SliceGrad" ? slice_whole_axes(r, 1, xs) : unpadded_axes(r, xs.size());
      if (!untouched_axes_split(r, untouched, k, why)) return std::nullopt;
      return k;
    }
    if (!planner_guard(r, why)) return std::nullopt;
    if (op.op_type == "ConvGradFilter") {
      // X's rows as the whole op has them (the guard checked that dY is spatially whole).
      Box& x = k.inputs[0].box;
      const auto& xs = g.tensor(op.inputs[0]).shape;
      for (size_t d = 2; d < xs.size() && d < x.size(); ++d) x[d] = {0, xs[d]};
    }
    if (op.op_type == "Attention" && !r.output_boxes.empty() && r.output_boxes[0].size() >= 2) {
      // A causal mask compares positions in the whole sequence.
      const Box& y = r.output_boxes[0];
      k.attributes["query_offset"] =
          ir::Attribute{op.int_attr("query_offset", 0) + y[y.size() - 2].begin};
    }
    if (op.op_type == "DropoutTrain") {
      // The mask hashes each element's index in the whole tensor: tell the shard where it is.
      std::vector<int64_t> offset;
      for (const Range& d : r.output_boxes[0]) offset.push_back(d.begin);
      k.attributes["shard_offset"] = ir::Attribute{offset};
      k.attributes["full_shape"] = ir::Attribute{g.tensor(op.outputs[0]).shape};
    }
    return k;
  }
  const std::string& t = op.op_type;
  if (t == "Conv" || t == "MaxPool" || t == "AveragePool") {
    // A split of the kernel window (partial sums over kernel positions) would need shifted
    // inputs and a smaller kernel_shape: run whole.
    if (t == "Conv" && !spatial_whole(r, 1)) {
      why = "split of the kernel window";
      return std::nullopt;
    }
    if (t == "Conv" && op.int_attr("group", 1) != 1) {
      const auto& xs = g.tensor(op.inputs[0]).shape;
      if (!whole_on(r.input_boxes[0], xs, 1) ||
          !is_whole(r.input_boxes[1], g.tensor(op.inputs[1]).shape)) {
        why = "grouped convolution split along channels";
        return std::nullopt;
      }
    }
    if (!rewrite_pads(r, k.attributes, why)) return std::nullopt;
  } else if (t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze") {
    auto in = flat_run(r.input_boxes[0], g.tensor(op.inputs[0]).shape);
    auto out = flat_run(r.output_boxes[0], g.tensor(op.outputs[0]).shape);
    const auto& xs = g.tensor(op.inputs[0]).shape;
    const auto& ys = g.tensor(op.outputs[0]).shape;
    if ((!in || !out || *in != *out) &&
        !reshape_groups_match(r.input_boxes[0], xs, r.output_boxes[0], ys)) {
      why = "the slice is not one contiguous run in both shapes";
      return std::nullopt;
    }
    if (t == "Reshape" && op.inputs.size() > 1)
      k.inputs[1] = {
          ShardInput::Kind::kConstant, {}, int64_constant("shape", box_shape(r.output_boxes[0]))};
  } else if (t == "Expand") {
    k.inputs[1] = {
        ShardInput::Kind::kConstant, {}, int64_constant("shape", box_shape(r.output_boxes[0]))};
  } else if (t == "Resize") {
    if (!resize_split(r, k, false, why)) return std::nullopt;
  } else if (t == "Slice") {
    if (!rewrite_slice(r, k, why)) return std::nullopt;
  } else if (t == "Pad") {
    if (!untouched_axes_split(r, unpadded_axes(r, g.tensor(op.inputs[0]).shape.size()), k, why))
      return std::nullopt;
  } else if (t == "Gather") {
    const auto& ds = g.tensor(op.inputs[0]).shape;
    if (!whole_on(r.input_boxes[0], ds,
                  static_cast<size_t>(norm_axis(op.int_attr("axis", 0), ds.size())))) {
      why = "data split along the gather axis";
      return std::nullopt;
    }
  }
  if (!shapes_match(r, k, why)) return std::nullopt;
  return k;
}

}  // namespace planner::analysis
