// Checks on ONNX input before ONNX's own parser and shape inference see it.
#include "importers/onnx_checks.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

namespace planner::importers {

Expected<void> check_model_text(std::string_view text, const std::string& source) {
  int line = 1, depth = 0;
  size_t line_start = 0;
  auto where = [&](size_t i) { return fmt::format("{}:{}:{}", source, line, i - line_start + 1); };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0') return make_error("{}: the model text holds a NUL byte", where(i));
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if (c == '#') {  // a comment runs to the end of the line
      while (i + 1 < text.size() && text[i + 1] != '\n') {
        if (text[i + 1] == '\0')
          return make_error("{}: the model text holds a NUL byte", where(i + 1));
        ++i;
      }
    } else if (c == '"') {  // brackets inside a string are not structure
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;  // an escaped character
        if (text[i] == '\0') return make_error("{}: the model text holds a NUL byte", where(i));
        if (text[i] == '\n') {
          ++line;
          line_start = i + 1;
        }
      }
    } else if (c == '{' || c == '(' || c == '[') {
      if (++depth > kMaxTextNesting)
        return make_error("{}: the model text is nested more than {} levels deep", where(i),
                          kMaxTextNesting);
    } else if (c == '}' || c == ')' || c == ']') {
      depth = std::max(0, depth - 1);  // unbalanced text is the parser's to report
    }
  }
  return ok();
}

namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;

// The ints of attribute `name`, or nullopt when the node does not set it.
std::optional<std::vector<int64_t>> ints_attr(const InferenceContext& ctx, const char* name) {
  const AttributeProto* a = ctx.getAttribute(name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::string list_text(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

// The static dimensions of input `i` (-1 where unknown), or nullopt when its rank is unknown.
std::optional<std::vector<int64_t>> input_dims(const InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs()) return std::nullopt;
  const onnx::TypeProto* t = ctx.getInputType(i);
  if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : t->tensor_type().shape().dim())
    dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return dims;
}

// Each value of list attribute `name` (when set) must be at least `min`, and there must be
// `per_axis` of them per spatial axis when the number of axes is known.
void check_list(const InferenceContext& ctx, const char* name, int64_t min,
                std::optional<size_t> spatial, size_t per_axis = 1) {
  auto v = ints_attr(ctx, name);
  if (!v) return;
  if (spatial && v->size() != *spatial * per_axis)
    fail_shape_inference("attribute '", name, "' has ", v->size(), " values, ", list_text(*v),
                         ", but the input has ", *spatial, " spatial dimension",
                         *spatial == 1 ? "" : "s", " (", name, " needs ", *spatial * per_axis, ")");
  for (int64_t x : *v)
    if (x < min)
      fail_shape_inference("attribute '", name, "' must hold values of at least ", min, ", got ",
                           list_text(*v));
}

enum class Kind { kConv, kConvTranspose, kPool };

// The checks that make ONNX's conv/pool rule safe: it divides by strides, indexes the pads by
// spatial axis and reads the weight's dimensions by the input's rank.
void check_conv_pool(const InferenceContext& ctx, Kind kind, size_t x_input, size_t w_input) {
  const auto x = input_dims(ctx, x_input);
  std::optional<size_t> spatial;
  if (x) {
    if (x->size() < 3)
      fail_shape_inference("input has rank ", x->size(),
                           "; it needs a batch, a channel and at least one spatial dimension");
    spatial = x->size() - 2;
  }
  check_list(ctx, "kernel_shape", 1, spatial);
  check_list(ctx, "strides", 1, spatial);
  check_list(ctx, "dilations", 1, spatial);
  check_list(ctx, "pads", 0, spatial, 2);
  check_list(ctx, "output_padding", 0, spatial);
  check_list(ctx, "output_shape", 0, std::nullopt);  // no count check: may include N and C
  int64_t group = 1;
  if (const AttributeProto* g = ctx.getAttribute("group")) group = g->i();
  if (group < 1) fail_shape_inference("attribute 'group' must be at least 1, got ", group);
  if (kind == Kind::kPool) {
    if (!ctx.getAttribute("kernel_shape") && spatial)
      fail_shape_inference("attribute 'kernel_shape' is required");
  } else {
    const auto w = input_dims(ctx, w_input);
    if (x && w && w->size() != x->size())
      fail_shape_inference("weight has rank ", w->size(), " but the input has rank ", x->size());
    if (x && w && (*x)[1] >= 0) {
      const int64_t c = (*x)[1];
      if (c % group != 0)
        fail_shape_inference("group ", group, " does not divide the ", c, " input channels");
      if (kind == Kind::kConv && (*w)[1] >= 0 && static_cast<__int128>((*w)[1]) * group != c)
        fail_shape_inference("weight has ", (*w)[1], " channels per group but the input has ", c,
                             " channels in ", group, " group", group == 1 ? "" : "s");
      if (kind == Kind::kConvTranspose && (*w)[0] >= 0 && (*w)[0] != c)
        fail_shape_inference("weight has ", (*w)[0], " input channels but the input has ", c);
    }
    if (w && kind == Kind::kConv && !w->empty() && (*w)[0] >= 0 && (*w)[0] % group != 0)
      fail_shape_inference("group ", group, " does not divide the ", (*w)[0], " output channels");
  }
  // Sizes the rule adds and multiplies must stay within int64.
  if (!x) return;
  auto pads = ints_attr(ctx, "pads").value_or(std::vector<int64_t>(2 * *spatial, 0));
  auto dil = ints_attr(ctx, "dilations").value_or(std::vector<int64_t>(*spatial, 1));
  auto kernel = ints_attr(ctx, "kernel_shape");
  if (!kernel && kind != Kind::kPool) {
    if (auto w = input_dims(ctx, w_input); w && w->size() == x->size())
      kernel = std::vector<int64_t>(w->begin() + 2, w->end());
  }
  for (size_t i = 0; i < *spatial; ++i) {
    __int128 padded =
        static_cast<__int128>((*x)[i + 2] < 0 ? 0 : (*x)[i + 2]) + pads[i] + pads[i + *spatial];
    __int128 reach =
        kernel && (*kernel)[i] > 0 ? static_cast<__int128>(dil[i]) * ((*kernel)[i] - 1) + 1 : 1;
    if (padded > INT64_MAX || reach > INT64_MAX)
      fail_shape_inference("spatial axis ", i, ": the padded input or the dilated kernel is too ",
                           "large (over 2^63)");
  }
}

// MaxUnpool's rule reads the indices' axis 1 whatever their rank (without output_shape).
void check_max_unpool(const InferenceContext& ctx) {
  const auto x = input_dims(ctx, 0);
  check_list(ctx, "kernel_shape", 1,
             x ? std::optional<size_t>(x->size() - std::min<size_t>(2, x->size())) : std::nullopt);
  check_list(ctx, "strides", 1, std::nullopt);
  check_list(ctx, "pads", 0, std::nullopt);
  if (ctx.getNumInputs() == 3 || !x) return;
  const auto indices = input_dims(ctx, 1);
  if (!indices) fail_shape_inference("the indices (input 1) need a known shape");
  if (indices->size() != x->size())
    fail_shape_inference("the indices have rank ", indices->size(), " but the input has rank ",
                         x->size());
}

// MaxRoiPool's rule writes two pooled dimensions whatever the input's rank.
void check_max_roi_pool(const InferenceContext& ctx) {
  if (const auto x = input_dims(ctx, 0); x && x->size() != 4)
    fail_shape_inference("input has rank ", x->size(), "; it needs 4 (N, C, H, W)");
  check_list(ctx, "pooled_shape", 1, std::optional<size_t>(2));
}

// GatherND's rule indexes both shapes by batch_dims and by the indices' last dimension.
void check_gather_nd(const InferenceContext& ctx) {
  int64_t batch_dims = 0;
  if (const AttributeProto* b = ctx.getAttribute("batch_dims")) batch_dims = b->i();
  if (batch_dims < 0)
    fail_shape_inference("attribute 'batch_dims' must not be negative, got ", batch_dims);
  const auto data = input_dims(ctx, 0);
  const auto indices = input_dims(ctx, 1);
  if (!data || !indices) return;
  if (indices->empty()) fail_shape_inference("the indices must have rank 1 or more");
  if (batch_dims >= static_cast<int64_t>(std::min(data->size(), indices->size())))
    fail_shape_inference("attribute 'batch_dims' ", batch_dims, " must be less than both ranks, ",
                         data->size(), " and ", indices->size());
  const int64_t last = indices->back();
  if (last >= 0 && (last < 1 || last > static_cast<int64_t>(data->size()) - batch_dims))
    fail_shape_inference("the indices' last dimension ", last, " must be 1 to ",
                         static_cast<int64_t>(data->size()) - batch_dims);
}

// Control flow: the rules of Scan, Loop and If read their subgraph attributes unchecked (a Scan
// without a body crashed ONNX 1.12's ScanInferenceFunction).
void check_subgraphs(const InferenceContext& ctx, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const AttributeProto* a = ctx.getAttribute(name);
    if (!a || !a->has_g()) fail_shape_inference("attribute '", name, "' must be a graph");
  }
}

// Wraps the inference function of every version of `op` (default domain) with `check`.
void wrap(const std::string& op, std::function<void(InferenceContext&)> check) {
  const onnx::OpSchema* last = nullptr;
  // Every opset the importer accepts (7 to 17) and a margin: later versions resolve to the
  // newest schema, which the loop then sees once.
  for (int version = 1; version <= 32; ++version) {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, version, onnx::ONNX_DOMAIN);
    if (!schema || schema == last) continue;
    last = schema;
    // The registry hands out const pointers to schemas it owns and never shares across
    // threads while they change: this runs once, under std::call_once, before any inference.
    auto* mutable_schema = const_cast<onnx::OpSchema*>(schema);
    onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
    mutable_schema->TypeAndShapeInferenceFunction([check, original](InferenceContext& ctx) {
      check(ctx);
      original(ctx);
    });
  }
}

}  // namespace

void guard_shape_inference() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto conv = [](InferenceContext& ctx) { check_conv_pool(ctx, Kind::kConv, 0, 1); };
    wrap("Conv", conv);
    wrap("ConvInteger", conv);
    wrap("QLinearConv", [](InferenceContext& ctx) { check_conv_pool(ctx, Kind::kConv, 0, 3); });
    wrap("ConvTranspose",
         [](InferenceContext& ctx) { check_conv_pool(ctx, Kind::kConvTranspose, 0, 1); });
    auto pool = [](InferenceContext& ctx) { check_conv_pool(ctx, Kind::kPool, 0, 0); };
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) wrap(op, pool);
    wrap("MaxUnpool", check_max_unpool);
    wrap("MaxRoiPool", check_max_roi_pool);
    wrap("GatherND", check_gather_nd);
    wrap("Scan", [](InferenceContext& ctx) {
      check_subgraphs(ctx, {"body"});
      if (!ctx.getAttribute("num_scan_inputs"))
        fail_shape_inference("attribute 'num_scan_inputs' is required");
    });
    wrap("Loop", [](InferenceContext& ctx) { check_subgraphs(ctx, {"body"}); });
    wrap("If", [](InferenceContext& ctx) { check_subgraphs(ctx, {"then_branch", "else_branch"}); });
  });
}

}  // namespace planner::importers
