// ir::Op -> tdl::InstanceRequest, with ONNX defaults normalised (see instance_request.h).
#include "analysis/instance_request.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace planner::analysis {
namespace {

// Constant inputs larger than this are weights or tables, never index data: not copied.
constexpr int64_t kMaxConstantElements = 4096;

bool is_integer(ir::DType t) {
  switch (t) {
    case ir::DType::kInt8:
    case ir::DType::kInt16:
    case ir::DType::kInt32:
    case ir::DType::kInt64:
    case ir::DType::kUInt8:
    case ir::DType::kUInt16:
    case ir::DType::kUInt32:
    case ir::DType::kUInt64:
      return true;
    default:
      return false;
  }
}

// Tensor-valued attributes (rare outside Constant) carry no index information: dropped.
std::optional<tdl::AttrValue> to_attr_value(const ir::Attribute& a) {
  return std::visit(
      [](const auto& v) -> std::optional<tdl::AttrValue> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<const ir::Tensor>>)
          return std::nullopt;
        else
          return tdl::AttrValue(v);
      },
      a.value);
}

class RequestBuilder {
 public:
  RequestBuilder(const ir::Graph& graph, const ir::Op& op) : graph_(graph), op_(op) {}

  Expected<tdl::InstanceRequest> build() {
    req_.op_type = op_.op_type;
    req_.domain = op_.domain == "ai.onnx" ? "" : op_.domain;
    req_.node_name = op_.name;
    for (const auto& [name, attr] : op_.attributes)
      if (auto v = to_attr_value(attr)) req_.attributes.emplace(name, std::move(*v));
    for (ir::TensorId t : op_.inputs) {
      tdl::InstanceInput in;
      if (t == ir::kNoTensor) {
        in.present = false;
      } else {
        const ir::Tensor& tensor = graph_.tensor(t);
        in.shape = tensor.shape;
        if (tensor.has_data() && is_integer(tensor.dtype) &&
            tensor.num_elements() <= kMaxConstantElements)
          in.values = tensor.int_values();
      }
      req_.inputs.push_back(std::move(in));
    }
    for (ir::TensorId t : op_.outputs) {
      tdl::InstanceOutput out;
      if (t == ir::kNoTensor)
        out.present = false;
      else
        out.shape = graph_.tensor(t).shape;
      req_.outputs.push_back(std::move(out));
    }
    PLANNER_TRY(normalise());
    return std::move(req_);
  }

 private:
  Error fail(const std::string& message) const { return Error(node_label(op_) + ": " + message); }

  int input_rank(size_t i) const {
    return i < req_.inputs.size() && req_.inputs[i].present
               ? static_cast<int>(req_.inputs[i].shape.size())
               : -1;
  }

  const int64_t* int_attr(const std::string& name) const {
    auto it = req_.attributes.find(name);
    return it == req_.attributes.end() ? nullptr : std::get_if<int64_t>(&it->second);
  }
  const std::vector<int64_t>* ints_attr(const std::string& name) const {
    auto it = req_.attributes.find(name);
    return it == req_.attributes.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
  }

  // Makes `axis` non-negative for a tensor of rank `rank`; `allow_end` admits axis == rank
  // (Flatten's axis may point past the last dimension).
  Expected<int64_t> normal_axis(int64_t axis, int64_t rank, const char* what,
                                bool allow_end = false) const {
    int64_t upper = allow_end ? rank : rank - 1;
    if (axis < -rank || axis > upper)
      return fail(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
    return axis < 0 ? axis + rank : axis;
  }

  Expected<void> normalise() {
    // The normalisations below follow ONNX's operator definitions; other domains (the
    // planner's own backward operators among them) carry normalised attributes already.
    if (!op_.domain.empty() && op_.domain != "ai.onnx") return ok();
    const std::string& type = op_.op_type;
    if (type == "Conv" || type == "MaxPool" || type == "AveragePool" || type == "LpPool")
      return normalise_window();
    static const std::set<std::string> kAxisOps = {"Softmax",
                                                   "LogSoftmax",
                                                   "Hardmax",
                                                   "LpNormalization",
                                                   "LayerNormalization",
                                                   "Gather",
                                                   "GatherElements",
                                                   "Concat",
                                                   "Split",
                                                   "Flatten",
                                                   "ArgMax",
                                                   "ArgMin",
                                                   "CumSum",
                                                   "TopK"};
    if (type == "CumSum" && input_rank(1) >= 0) {
      if (!req_.inputs[1].values || req_.inputs[1].values->size() != 1)
        return fail("input 'axis' is not a constant scalar");
      req_.attributes["axis"] = (*req_.inputs[1].values)[0];
    }
    if (type == "OneHot") {  // the axis counts in the output, one rank above the indices
      const int64_t rank = input_rank(0);
      if (const int64_t* axis = int_attr("axis"); axis && rank >= 0) {
        PLANNER_TRY_ASSIGN(int64_t a, normal_axis(*axis, rank + 1, "axis"));
        req_.attributes["axis"] = a;
      }
      return ok();
    }
    if (kAxisOps.count(type)) {
      int64_t rank = input_rank(0);
      if (rank < 0) return ok();  // instantiation reports the missing input
      // Defaults differ per operator (Softmax -1, Gather 0, Flatten 1); the description holds
      // them, so only a value the node sets is normalised.
      if (const int64_t* axis = int_attr("axis")) {
        PLANNER_TRY_ASSIGN(int64_t a, normal_axis(*axis, rank, "axis", type == "Flatten"));
        req_.attributes["axis"] = a;
      }
      return ok();
    }
    if (type.rfind("Reduce", 0) == 0) return normalise_reduce_axes();
    return ok();
  }

  Expected<void> normalise_reduce_axes() {
    int64_t rank = input_rank(0);
    if (rank < 0) return ok();
    std::vector<int64_t> axes;
    if (input_rank(1) >= 0) {
      if (!req_.inputs[1].values) return fail("input 'axes' is not a constant");
      axes = *req_.inputs[1].values;
    } else if (const std::vector<int64_t>* a = ints_attr("axes")) {
      axes = *a;
    } else {
      return ok();
    }
    for (int64_t& a : axes) {
      PLANNER_TRY_ASSIGN(a, normal_axis(a, rank, "reduction axis"));
    }
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      return fail("reduction axes repeat an axis");
    req_.attributes["axes"] = axes;
    return ok();
  }

  // Conv and the pools: every window attribute explicit, auto_pad resolved.
  Expected<void> normalise_window() {
    int64_t rank = input_rank(0);
    if (rank < 3) return ok();  // instantiation reports the rank mismatch
    size_t spatial = static_cast<size_t>(rank - 2);
    const std::vector<int64_t>& in_shape = req_.inputs[0].shape;

    std::vector<int64_t> kernel;
    if (const auto* k = ints_attr("kernel_shape"))
      kernel = *k;
    else if (op_.op_type == "Conv" && input_rank(1) == rank)
      kernel.assign(req_.inputs[1].shape.begin() + 2, req_.inputs[1].shape.end());
    else
      return fail("attribute 'kernel_shape' is required");
    if (kernel.size() != spatial)
      return fail(fmt::format("attribute 'kernel_shape' has {} values, expected {}", kernel.size(),
                              spatial));

    auto list = [&](const char* name, size_t n, int64_t fill) -> Expected<std::vector<int64_t>> {
      if (const auto* v = ints_attr(name)) {
        if (v->size() != n)
          return fail(fmt::format("attribute '{}' has {} values, expected {}", name, v->size(), n));
        return *v;
      }
      return std::vector<int64_t>(n, fill);
    };
    PLANNER_TRY_ASSIGN(std::vector<int64_t> strides, list("strides", spatial, 1));
    PLANNER_TRY_ASSIGN(std::vector<int64_t> dilations, list("dilations", spatial, 1));
    PLANNER_TRY_ASSIGN(std::vector<int64_t> pads, list("pads", 2 * spatial, 0));
    for (size_t d = 0; d < spatial; ++d)
      if (strides[d] <= 0 || dilations[d] <= 0 || kernel[d] <= 0)
        return fail("strides, dilations and kernel_shape must be positive");

    auto auto_pad_it = req_.attributes.find("auto_pad");
    std::string auto_pad = "NOTSET";
    if (auto_pad_it != req_.attributes.end())
      if (const auto* s = std::get_if<std::string>(&auto_pad_it->second)) auto_pad = *s;
    if (auto_pad == "VALID") {
      std::fill(pads.begin(), pads.end(), 0);
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // ONNX: output = ceil(input / stride); the padding that achieves it is split evenly, the
      // odd element going to the end (SAME_UPPER) or the beginning (SAME_LOWER).
      for (size_t d = 0; d < spatial; ++d) {
        int64_t in = in_shape[d + 2];
        int64_t out = (in + strides[d] - 1) / strides[d];
        int64_t total =
            std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in);
        int64_t small = total / 2, large = total - total / 2;
        pads[d] = auto_pad == "SAME_UPPER" ? small : large;
        pads[d + spatial] = auto_pad == "SAME_UPPER" ? large : small;
      }
    } else if (auto_pad != "NOTSET") {
      return fail(fmt::format("attribute 'auto_pad' has the unknown value \"{}\"", auto_pad));
    }
    req_.attributes["kernel_shape"] = kernel;
    req_.attributes["strides"] = strides;
    req_.attributes["dilations"] = dilations;
    req_.attributes["pads"] = pads;
    req_.attributes["auto_pad"] = std::string("NOTSET");
    return ok();
  }

  const ir::Graph& graph_;
  const ir::Op& op_;
  tdl::InstanceRequest req_;
};

void append_shape(std::string& out, const std::vector<int64_t>& shape) {
  out += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(shape[i]);
  }
  out += ']';
}

}  // namespace

std::string node_label(const ir::Op& op) {
  bool default_domain = op.domain.empty() || op.domain == "ai.onnx";
  return fmt::format("node '{}' ({}{})", op.name, default_domain ? "" : op.domain + ".",
                     op.op_type);
}

Expected<tdl::InstanceRequest> make_instance_request(const ir::Graph& graph, ir::OpId op) {
  return RequestBuilder(graph, graph.op(op)).build();
}

std::string request_key(const tdl::InstanceRequest& request) {
  std::string key = request.domain + '|' + request.op_type + '|';
  for (const auto& [name, value] : request.attributes)
    key += name + '=' + tdl::attr_to_string(value) + ';';
  key += "|in";
  for (const tdl::InstanceInput& in : request.inputs) {
    key += ' ';
    if (!in.present) {
      key += '-';
      continue;
    }
    append_shape(key, in.shape);
    if (in.values) {
      key += '=';
      append_shape(key, *in.values);
    }
  }
  key += "|out";
  for (const tdl::InstanceOutput& out : request.outputs) {
    key += ' ';
    if (out.present)
      append_shape(key, out.shape);
    else
      key += '-';
  }
  return key;
}

}  // namespace planner::analysis
