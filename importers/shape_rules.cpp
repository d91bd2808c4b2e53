// Shape rules per ONNX operator type (opsets 7 to 17), tolerant of unknown dimensions.
#include "importers/shape_rules.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

namespace planner::importers {

bool PartialType::is_static() const {
  if (!dims) return false;
  return std::all_of(dims->begin(), dims->end(), [](int64_t d) { return d >= 0; });
}

void PartialType::merge_from(const PartialType& other) {
  if (!dtype) dtype = other.dtype;
  if (!other.dims) return;
  if (!dims) {
    dims = other.dims;
    return;
  }
  if (dims->size() != other.dims->size()) return;
  for (size_t i = 0; i < dims->size(); ++i)
    if ((*dims)[i] < 0) (*dims)[i] = (*other.dims)[i];
}

namespace {

using Dims = std::vector<int64_t>;

// Everything a rule needs about one op, with small accessors for optional inputs.
struct Ctx {
  const ir::Op& op;
  std::span<const PartialType> in;
  std::span<const ir::Tensor* const> values;
  std::vector<PartialType> out;

  bool has_input(size_t i) const { return i < op.inputs.size() && op.inputs[i] != ir::kNoTensor; }
  const Dims* dims(size_t i) const {
    return i < in.size() && has_input(i) && in[i].dims ? &*in[i].dims : nullptr;
  }
  std::optional<ir::DType> dtype(size_t i) const {
    return i < in.size() && has_input(i) ? in[i].dtype : std::nullopt;
  }
  // The integer values of constant input i, if known.
  std::optional<std::vector<int64_t>> ints(size_t i) const {
    if (i >= values.size() || !has_input(i) || !values[i] || !values[i]->has_data())
      return std::nullopt;
    return values[i]->int_values();
  }
  std::optional<std::vector<double>> floats(size_t i) const {
    if (i >= values.size() || !has_input(i) || !values[i] || !values[i]->has_data())
      return std::nullopt;
    return values[i]->float_values();
  }
  // A list of ints from an attribute (older opsets) or an input (newer opsets).
  std::optional<std::vector<int64_t>> ints_attr_or_input(std::string_view attr, size_t i) const {
    if (const ir::Attribute* a = op.attribute(attr); a && a->is_ints())
      return std::get<std::vector<int64_t>>(a->value);
    return ints(i);
  }
  void set(size_t i, std::optional<ir::DType> dtype, std::optional<Dims> dims) {
    if (i < out.size()) out[i] = PartialType{dtype, std::move(dims)};
  }
};

bool known(int64_t d) {
  return d >= 0;
}

int64_t product(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < d.size(); ++i) {
    if (!known(d[i])) return kUnknownDim;
    // Saturate instead of overflowing; Graph::finalize reports the absurd size later.
    if (d[i] != 0 && p > INT64_MAX / d[i]) return kUnknownDim;
    p *= d[i];
  }
  return p;
}

// Normalises a possibly negative axis against `rank`; an Error when out of range.
Expected<size_t> norm_axis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return make_error("axis {} is out of range for rank {}", axis, rank);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// Numpy-style multidirectional broadcasting of partially known shapes.
Expected<std::optional<Dims>> broadcast(const std::vector<const Dims*>& shapes) {
  size_t rank = 0;
  for (const Dims* s : shapes) {
    if (!s) return std::optional<Dims>();
    rank = std::max(rank, s->size());
  }
  Dims out(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    bool unknown = false;
    int64_t extent = 1;
    for (const Dims* s : shapes) {
      if (s->size() + k < rank) continue;  // this operand has no such axis
      int64_t d = (*s)[s->size() - rank + k];
      if (!known(d)) {
        unknown = true;
        continue;
      }
      if (d == 1) continue;
      if (extent != 1 && extent != d) {
        std::vector<std::string> texts;
        for (const Dims* t : shapes) texts.push_back(ir::shape_to_string(*t));
        return make_error("cannot broadcast shapes {}", fmt::join(texts, " and "));
      }
      extent = d;
    }
    out[k] = (extent == 1 && unknown) ? kUnknownDim : extent;
  }
  return std::optional<Dims>(std::move(out));
}

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Output 0 has input 0's type: activations, normalisations, casts to the same shape.
void same_as_input(Ctx& c) {
  c.set(0, c.dtype(0), c.dims(0) ? std::optional<Dims>(*c.dims(0)) : std::nullopt);
}

Expected<void> rule_broadcast(Ctx& c) {
  std::vector<const Dims*> shapes;
  for (size_t i = 0; i < c.op.inputs.size(); ++i)
    if (c.has_input(i)) shapes.push_back(c.dims(i));
  PLANNER_TRY_ASSIGN(auto dims, broadcast(shapes));
  const std::string& t = c.op.op_type;
  std::optional<ir::DType> dtype = c.dtype(0);
  if (is_one_of(t,
                {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}))
    dtype = ir::DType::kBool;
  if (t == "Where") dtype = c.dtype(1);
  c.set(0, dtype, dims);
  return ok();
}

Expected<void> rule_matmul(Ctx& c) {
  const Dims* a = c.dims(0);
  const Dims* b = c.dims(1);
  if (!a || !b) return c.set(0, c.dtype(0), std::nullopt), ok();
  if (a->empty() || b->empty()) return make_error("MatMul operands must not be scalars");
  Dims a2 = *a, b2 = *b;
  bool a_vec = a2.size() == 1, b_vec = b2.size() == 1;
  if (a_vec) a2.insert(a2.begin(), 1);
  if (b_vec) b2.push_back(1);
  int64_t ka = a2.back(), kb = b2[b2.size() - 2];
  if (known(ka) && known(kb) && ka != kb)
    return make_error("matrix multiplication inner dimensions differ: {} x {}",
                      ir::shape_to_string(*a), ir::shape_to_string(*b));
  Dims batch_a(a2.begin(), a2.end() - 2), batch_b(b2.begin(), b2.end() - 2);
  PLANNER_TRY_ASSIGN(auto batch, broadcast({&batch_a, &batch_b}));
  Dims out = *batch;
  if (!a_vec) out.push_back(a2[a2.size() - 2]);
  if (!b_vec) out.push_back(b2.back());
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_gemm(Ctx& c) {
  const Dims* a = c.dims(0);
  const Dims* b = c.dims(1);
  if (!a || !b) return c.set(0, c.dtype(0), std::nullopt), ok();
  if (a->size() != 2 || b->size() != 2)
    return make_error("Gemm operands must be matrices, got {} and {}", ir::shape_to_string(*a),
                      ir::shape_to_string(*b));
  bool ta = c.op.int_attr("transA", 0) != 0, tb = c.op.int_attr("transB", 0) != 0;
  int64_t m = ta ? (*a)[1] : (*a)[0], ka = ta ? (*a)[0] : (*a)[1];
  int64_t kb = tb ? (*b)[1] : (*b)[0], n = tb ? (*b)[0] : (*b)[1];
  if (known(ka) && known(kb) && ka != kb)
    return make_error("Gemm inner dimensions differ: {} x {} (transA={}, transB={})",
                      ir::shape_to_string(*a), ir::shape_to_string(*b), int(ta), int(tb));
  c.set(0, c.dtype(0), Dims{m, n});
  return ok();
}

// Spatial output extent of a convolution or pooling window (stride, dilation and kernel
// positive, pads not negative: checked by the caller). Computed in 128 bits: pads or
// dilations near INT64_MAX must give an error, not a wrapped size.
Expected<int64_t> window_out(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb,
                             int64_t pe, const std::string& auto_pad, bool ceil_mode) {
  if (!known(in) || !known(k)) return kUnknownDim;
  using Wide = __int128;
  const Wide eff = static_cast<Wide>(k - 1) * dil + 1;
  Wide out = 0;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    out = (static_cast<Wide>(in) + stride - 1) / stride;
  } else if (auto_pad == "VALID") {
    out = in < eff ? 0 : (in - eff) / stride + 1;
  } else {
    const Wide span = static_cast<Wide>(in) + pb + pe - eff;
    if (span < 0) return 0;
    out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    // With ceil_mode the last window must start inside the input or its leading padding.
    if (ceil_mode && (out - 1) * stride >= static_cast<Wide>(in) + pb) --out;
  }
  if (out > INT64_MAX)
    return make_error("the output extent {} + pads {} and {} overflows int64", in, pb, pe);
  return static_cast<int64_t>(out);
}

// Every value of `values` at least `min`, or an error naming the attribute.
Expected<void> check_at_least(const Dims& values, int64_t min, const char* name) {
  for (int64_t v : values)
    if (v < min)
      return make_error("{} must be at least {}, got {}", name, min, ir::shape_to_string(values));
  return ok();
}

Expected<void> rule_conv_or_pool(Ctx& c, bool is_conv) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, c.dtype(0), std::nullopt), ok();
  if (x->size() < 3)
    return make_error("input must have a batch, a channel and spatial axes, got {}",
                      ir::shape_to_string(*x));
  size_t n = x->size() - 2;
  Dims kernel = c.op.ints_attr("kernel_shape");
  int64_t channels = (*x)[1];
  if (is_conv) {
    const Dims* w = c.dims(1);
    if (!w) return c.set(0, c.dtype(0), std::nullopt), ok();
    if (w->size() != x->size())
      return make_error("weight shape {} does not match input shape {}", ir::shape_to_string(*w),
                        ir::shape_to_string(*x));
    int64_t group = c.op.int_attr("group", 1);
    if (group < 1) return make_error("group must be at least 1, got {}", group);
    if (known((*w)[1]) && known((*x)[1]) && static_cast<__int128>((*w)[1]) * group != (*x)[1])
      return make_error("input has {} channels but the weight {} with group {} expects {}", (*x)[1],
                        ir::shape_to_string(*w), group, (*w)[1] * group);
    channels = (*w)[0];
    if (kernel.empty()) kernel.assign(w->begin() + 2, w->end());
  }
  if (kernel.size() != n)
    return make_error("kernel_shape has {} entries for {} spatial axes", kernel.size(), n);
  Dims strides = c.op.ints_attr("strides", Dims(n, 1));
  Dims dil = c.op.ints_attr("dilations", Dims(n, 1));
  Dims pads = c.op.ints_attr("pads", Dims(2 * n, 0));
  if (strides.size() != n || dil.size() != n || pads.size() != 2 * n)
    return make_error("strides, dilations or pads have the wrong length for {} spatial axes", n);
  for (int64_t s : strides)
    if (s <= 0) return make_error("strides must be positive");
  PLANNER_TRY(check_at_least(dil, 1, "dilations"));
  PLANNER_TRY(check_at_least(kernel, 1, "kernel_shape"));
  PLANNER_TRY(check_at_least(pads, 0, "pads"));
  std::string auto_pad = c.op.string_attr("auto_pad", "NOTSET");
  bool ceil_mode = c.op.int_attr("ceil_mode", 0) != 0;
  Dims out = {(*x)[0], channels};
  for (size_t i = 0; i < n; ++i) {
    PLANNER_TRY_ASSIGN(int64_t extent, window_out((*x)[i + 2], kernel[i], strides[i], dil[i],
                                                  pads[i], pads[i + n], auto_pad, ceil_mode));
    out.push_back(extent);
  }
  c.set(0, c.dtype(0), out);
  if (c.op.op_type == "MaxPool") c.set(1, ir::DType::kInt64, out);
  return ok();
}

Expected<void> rule_conv_transpose(Ctx& c) {
  const Dims* x = c.dims(0);
  const Dims* w = c.dims(1);
  if (!x || !w) return c.set(0, c.dtype(0), std::nullopt), ok();
  if (x->size() < 3 || w->size() != x->size())
    return make_error("input {} and weight {} do not fit a transposed convolution",
                      ir::shape_to_string(*x), ir::shape_to_string(*w));
  size_t n = x->size() - 2;
  int64_t group = c.op.int_attr("group", 1);
  Dims kernel = c.op.ints_attr("kernel_shape", Dims(w->begin() + 2, w->end()));
  Dims strides = c.op.ints_attr("strides", Dims(n, 1));
  Dims dil = c.op.ints_attr("dilations", Dims(n, 1));
  Dims pads = c.op.ints_attr("pads", Dims(2 * n, 0));
  Dims outpad = c.op.ints_attr("output_padding", Dims(n, 0));
  Dims out_shape = c.op.ints_attr("output_shape");
  if (kernel.size() != n || strides.size() != n || dil.size() != n || pads.size() != 2 * n ||
      outpad.size() != n)
    return make_error("attributes have the wrong length for {} spatial axes", n);
  if (group < 1) return make_error("group must be at least 1, got {}", group);
  PLANNER_TRY(check_at_least(strides, 1, "strides"));
  PLANNER_TRY(check_at_least(dil, 1, "dilations"));
  PLANNER_TRY(check_at_least(kernel, 1, "kernel_shape"));
  PLANNER_TRY(check_at_least(pads, 0, "pads"));
  PLANNER_TRY(check_at_least(outpad, 0, "output_padding"));
  using Wide = __int128;
  const Wide channels = known((*w)[1]) ? static_cast<Wide>((*w)[1]) * group : Wide{kUnknownDim};
  if (channels > INT64_MAX)
    return make_error("{} channels per group times group {} overflows int64", (*w)[1], group);
  Dims out = {(*x)[0], static_cast<int64_t>(channels)};
  for (size_t i = 0; i < n; ++i) {
    if (out_shape.size() == n) {
      out.push_back(out_shape[i]);
      continue;
    }
    int64_t in = (*x)[i + 2];
    if (!known(in)) {
      out.push_back(kUnknownDim);
      continue;
    }
    const Wide extent = static_cast<Wide>(strides[i]) * (in - 1) + outpad[i] +
                        static_cast<Wide>(kernel[i] - 1) * dil[i] + 1 - pads[i] - pads[i + n];
    if (extent > INT64_MAX || extent < 0)
      return make_error(
          "spatial axis {}: the output extent is out of range (stride {}, input {}, "
          "kernel {}, dilation {}, pads {} and {})",
          i, strides[i], in, kernel[i], dil[i], pads[i], pads[i + n]);
    out.push_back(static_cast<int64_t>(extent));
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_reshape(Ctx& c) {
  auto target = c.ints(1);
  const Dims* x = c.dims(0);
  if (!target) return c.set(0, c.dtype(0), std::nullopt), ok();
  bool allowzero = c.op.int_attr("allowzero", 0) != 0;
  Dims out = *target;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if (!x) {
        out[i] = kUnknownDim;
        continue;
      }
      if (i >= x->size())
        return make_error("shape {} copies axis {} of a rank-{} input",
                          ir::shape_to_string(*target), i, x->size());
      out[i] = (*x)[i];
    } else if (out[i] == -1) {
      if (infer_at >= 0)
        return make_error("shape {} has more than one -1", ir::shape_to_string(*target));
      infer_at = static_cast<int>(i);
    } else if (out[i] < -1) {
      return make_error("shape {} has a negative extent", ir::shape_to_string(*target));
    }
  }
  if (infer_at >= 0) {
    int64_t total = x ? product(*x, 0, x->size()) : kUnknownDim;
    int64_t rest = 1;
    bool rest_known = true;
    for (size_t i = 0; i < out.size(); ++i) {
      if (static_cast<int>(i) == infer_at) continue;
      if (!known(out[i]))
        rest_known = false;
      else
        rest *= out[i];
    }
    if (known(total) && rest_known) {
      if (rest == 0 || total % rest != 0)
        return make_error("cannot reshape {} ({} elements) to {}", ir::shape_to_string(*x), total,
                          ir::shape_to_string(*target));
      out[static_cast<size_t>(infer_at)] = total / rest;
    } else {
      out[static_cast<size_t>(infer_at)] = kUnknownDim;
    }
  } else if (x) {
    int64_t total = product(*x, 0, x->size()), want = product(out, 0, out.size());
    if (known(total) && known(want) && total != want)
      return make_error("cannot reshape {} ({} elements) to {} ({} elements)",
                        ir::shape_to_string(*x), total, ir::shape_to_string(out), want);
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_flatten(Ctx& c) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, c.dtype(0), Dims{kUnknownDim, kUnknownDim}), ok();
  int64_t axis = c.op.int_attr("axis", 1);
  int64_t r = static_cast<int64_t>(x->size());
  if (axis < -r || axis > r) return make_error("axis {} is out of range for rank {}", axis, r);
  size_t a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  c.set(0, c.dtype(0), Dims{product(*x, 0, a), product(*x, a, x->size())});
  return ok();
}

Expected<void> rule_transpose(Ctx& c) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, c.dtype(0), std::nullopt), ok();
  Dims perm = c.op.ints_attr("perm");
  if (perm.empty())
    for (size_t i = x->size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != x->size())
    return make_error("perm has {} entries for a rank-{} input", perm.size(), x->size());
  Dims out;
  std::vector<bool> seen(x->size(), false);
  for (int64_t p : perm) {
    PLANNER_TRY_ASSIGN(size_t a, norm_axis(p, x->size()));
    if (seen[a]) return make_error("perm repeats axis {}", p);
    seen[a] = true;
    out.push_back((*x)[a]);
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_squeeze(Ctx& c) {
  const Dims* x = c.dims(0);
  auto axes = c.ints_attr_or_input("axes", 1);
  bool axes_given = c.op.attribute("axes") || c.has_input(1);
  if (!x || (axes_given && !axes)) return c.set(0, c.dtype(0), std::nullopt), ok();
  std::vector<bool> drop(x->size(), false);
  if (axes_given) {
    for (int64_t a : *axes) {
      PLANNER_TRY_ASSIGN(size_t i, norm_axis(a, x->size()));
      if (known((*x)[i]) && (*x)[i] != 1)
        return make_error("cannot squeeze axis {} of extent {}", a, (*x)[i]);
      drop[i] = true;
    }
  } else {
    for (size_t i = 0; i < x->size(); ++i) {
      if (!known((*x)[i])) return c.set(0, c.dtype(0), std::nullopt), ok();
      drop[i] = (*x)[i] == 1;
    }
  }
  Dims out;
  for (size_t i = 0; i < x->size(); ++i)
    if (!drop[i]) out.push_back((*x)[i]);
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_unsqueeze(Ctx& c) {
  const Dims* x = c.dims(0);
  auto axes = c.ints_attr_or_input("axes", 1);
  if (!x || !axes) return c.set(0, c.dtype(0), std::nullopt), ok();
  size_t rank = x->size() + axes->size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    PLANNER_TRY_ASSIGN(size_t i, norm_axis(a, rank));
    if (inserted[i]) return make_error("axes repeat axis {}", a);
    inserted[i] = true;
  }
  Dims out;
  size_t next = 0;
  for (size_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : (*x)[next++]);
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_concat(Ctx& c) {
  std::optional<Dims> out;
  int64_t axis_attr = c.op.int_attr("axis", 0);
  size_t axis = 0;
  for (size_t i = 0; i < c.op.inputs.size(); ++i) {
    if (!c.has_input(i)) continue;
    const Dims* d = c.dims(i);
    if (!d) return c.set(0, c.dtype(0), std::nullopt), ok();
    if (!out) {
      PLANNER_TRY_ASSIGN(axis, norm_axis(axis_attr, d->size()));
      out = *d;
      continue;
    }
    if (d->size() != out->size())
      return make_error("inputs have different ranks: {} and {}", ir::shape_to_string(*out),
                        ir::shape_to_string(*d));
    for (size_t k = 0; k < d->size(); ++k) {
      if (k == axis) {
        (*out)[k] = known((*out)[k]) && known((*d)[k]) ? (*out)[k] + (*d)[k] : kUnknownDim;
      } else if (!known((*out)[k])) {
        (*out)[k] = (*d)[k];
      } else if (known((*d)[k]) && (*d)[k] != (*out)[k]) {
        return make_error("inputs differ outside the concatenation axis: {} and {}",
                          ir::shape_to_string(*out), ir::shape_to_string(*d));
      }
    }
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_split(Ctx& c) {
  const Dims* x = c.dims(0);
  if (!x) return ok();
  PLANNER_TRY_ASSIGN(size_t axis, norm_axis(c.op.int_attr("axis", 0), x->size()));
  auto split = c.ints_attr_or_input("split", 1);
  bool split_given = c.op.attribute("split") || c.has_input(1);
  size_t n = c.op.outputs.size();
  if ((split_given && !split) || n == 0) return ok();
  Dims sizes;
  int64_t extent = (*x)[axis];
  if (split_given) {
    if (split->size() != n)
      return make_error("split has {} entries for {} outputs", split->size(), n);
    int64_t sum = 0;
    for (int64_t s : *split) sum += s;
    if (known(extent) && sum != extent)
      return make_error("split sizes add up to {}, not the axis extent {}", sum, extent);
    sizes = *split;
  } else {
    if (!known(extent)) {
      sizes.assign(n, kUnknownDim);
    } else {
      int64_t chunk = (extent + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
      if (extent % static_cast<int64_t>(n) != 0 && c.op.attribute("num_outputs") == nullptr)
        return make_error("axis extent {} is not divisible into {} outputs", extent, n);
      for (size_t i = 0; i < n; ++i)
        sizes.push_back(std::min<int64_t>(
            chunk, std::max<int64_t>(0, extent - chunk * static_cast<int64_t>(i))));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    Dims d = *x;
    d[axis] = sizes[i];
    c.set(i, c.dtype(0), d);
  }
  return ok();
}

Expected<void> rule_slice(Ctx& c) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, c.dtype(0), std::nullopt), ok();
  std::optional<Dims> starts, ends, axes, steps;
  if (c.op.attribute("starts")) {  // opset < 10
    starts = c.op.ints_attr("starts");
    ends = c.op.ints_attr("ends");
    if (c.op.attribute("axes")) axes = c.op.ints_attr("axes");
  } else {
    starts = c.ints(1);
    ends = c.ints(2);
    if (c.has_input(3)) {
      axes = c.ints(3);
      if (!axes) starts.reset();
    }
    if (c.has_input(4)) {
      steps = c.ints(4);
      if (!steps) starts.reset();
    }
  }
  if (!starts || !ends) return c.set(0, c.dtype(0), Dims(x->size(), kUnknownDim)), ok();
  if (!axes)
    for (size_t i = 0; i < starts->size(); ++i) axes.emplace().push_back(static_cast<int64_t>(i));
  if (!axes) axes.emplace();
  if (!steps) steps = Dims(starts->size(), 1);
  if (ends->size() != starts->size() || axes->size() != starts->size() ||
      steps->size() != starts->size())
    return make_error("starts, ends, axes and steps have different lengths");
  Dims out = *x;
  for (size_t i = 0; i < starts->size(); ++i) {
    PLANNER_TRY_ASSIGN(size_t a, norm_axis((*axes)[i], x->size()));
    int64_t dim = (*x)[a], step = (*steps)[i];
    if (step == 0) return make_error("slice step must not be 0");
    if (!known(dim)) {
      out[a] = kUnknownDim;
      continue;
    }
    if (dim == 0) {
      out[a] = 0;
      continue;
    }
    int64_t s = (*starts)[i], e = (*ends)[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      out[a] = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      out[a] = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_gather(Ctx& c) {
  const Dims* x = c.dims(0);
  const Dims* idx = c.dims(1);
  if (!x || !idx) return c.set(0, c.dtype(0), std::nullopt), ok();
  if (x->empty()) return make_error("cannot gather from a scalar");
  PLANNER_TRY_ASSIGN(size_t axis, norm_axis(c.op.int_attr("axis", 0), x->size()));
  Dims out(x->begin(), x->begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), x->begin() + static_cast<std::ptrdiff_t>(axis) + 1, x->end());
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_expand(Ctx& c) {
  auto shape = c.ints(1);
  if (!shape) return c.set(0, c.dtype(0), std::nullopt), ok();
  const Dims* x = c.dims(0);
  PLANNER_TRY_ASSIGN(auto out, broadcast({x, &*shape}));
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_tile(Ctx& c) {
  const Dims* x = c.dims(0);
  auto repeats = c.ints(1);
  if (!x || !repeats)
    return c.set(0, c.dtype(0),
                 x ? std::optional<Dims>(Dims(x->size(), kUnknownDim)) : std::nullopt),
           ok();
  if (repeats->size() != x->size())
    return make_error("repeats has {} entries for a rank-{} input", repeats->size(), x->size());
  Dims out = *x;
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t r = (*repeats)[i];
    if (r < 0)
      return make_error("repeats {} holds a negative count", ir::shape_to_string(*repeats));
    if (known(out[i]) && __builtin_mul_overflow(out[i], r, &out[i]))
      return make_error("repeats {} make axis {} of {} overflow int64",
                        ir::shape_to_string(*repeats), i, ir::shape_to_string(*x));
    if (!known((*x)[i])) out[i] = kUnknownDim;
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_pad(Ctx& c) {
  const Dims* x = c.dims(0);
  auto pads = c.ints_attr_or_input("pads", 1);
  if (!x || !pads)
    return c.set(0, c.dtype(0),
                 x ? std::optional<Dims>(Dims(x->size(), kUnknownDim)) : std::nullopt),
           ok();
  size_t r = x->size();
  std::vector<size_t> axes;
  if (auto a = c.ints(3)) {
    for (int64_t v : *a) {
      PLANNER_TRY_ASSIGN(size_t k, norm_axis(v, r));
      axes.push_back(k);
    }
  } else {
    for (size_t k = 0; k < r; ++k) axes.push_back(k);
  }
  if (pads->size() != 2 * axes.size())
    return make_error("pads has {} entries for {} axes", pads->size(), axes.size());
  Dims out = *x;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t k = axes[i];
    if (!known(out[k])) continue;
    const __int128 padded = static_cast<__int128>(out[k]) + (*pads)[i] + (*pads)[i + axes.size()];
    if (padded < 0) return make_error("pads make axis {} negative", k);
    if (padded > INT64_MAX) return make_error("pads make axis {} overflow int64", k);
    out[k] = static_cast<int64_t>(padded);
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_reduce(Ctx& c) {
  const Dims* x = c.dims(0);
  bool keep = c.op.int_attr("keepdims", 1) != 0;
  bool from_input = !c.op.attribute("axes") && c.has_input(1);
  auto axes = c.ints_attr_or_input("axes", 1);
  if (!x || (from_input && !axes)) return c.set(0, c.dtype(0), std::nullopt), ok();
  Dims out;
  std::vector<bool> reduce(x->size(), false);
  if (!axes || axes->empty()) {
    if (c.op.int_attr("noop_with_empty_axes", 0) != 0) return same_as_input(c), ok();
    reduce.assign(x->size(), true);
  } else {
    for (int64_t a : *axes) {
      PLANNER_TRY_ASSIGN(size_t k, norm_axis(a, x->size()));
      reduce[k] = true;
    }
  }
  for (size_t k = 0; k < x->size(); ++k) {
    if (!reduce[k])
      out.push_back((*x)[k]);
    else if (keep)
      out.push_back(1);
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_argminmax(Ctx& c) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, ir::DType::kInt64, std::nullopt), ok();
  PLANNER_TRY_ASSIGN(size_t axis, norm_axis(c.op.int_attr("axis", 0), x->size()));
  Dims out = *x;
  if (c.op.int_attr("keepdims", 1) != 0)
    out[axis] = 1;
  else
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  c.set(0, ir::DType::kInt64, out);
  return ok();
}

Expected<void> rule_shape(Ctx& c) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, ir::DType::kInt64, Dims{kUnknownDim}), ok();
  int64_t r = static_cast<int64_t>(x->size());
  int64_t start = c.op.int_attr("start", 0), end = c.op.int_attr("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  c.set(0, ir::DType::kInt64, Dims{std::max<int64_t>(0, end - start)});
  return ok();
}

Expected<void> rule_constant_of_shape(Ctx& c) {
  std::optional<ir::DType> dtype = ir::DType::kFloat32;
  if (const ir::Attribute* a = c.op.attribute("value"); a && a->is_tensor())
    dtype = std::get<std::shared_ptr<const ir::Tensor>>(a->value)->dtype;
  auto shape = c.ints(0);
  if (!shape) {
    const Dims* d = c.dims(0);
    return c.set(0, dtype,
                 d && d->size() == 1 && known((*d)[0])
                     ? std::optional<Dims>(Dims(static_cast<size_t>((*d)[0]), kUnknownDim))
                     : std::nullopt),
           ok();
  }
  for (int64_t v : *shape)
    if (v < 0) return make_error("shape {} has a negative extent", ir::shape_to_string(*shape));
  c.set(0, dtype, *shape);
  return ok();
}

Expected<void> rule_range(Ctx& c) {
  auto start = c.floats(0), limit = c.floats(1), delta = c.floats(2);
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1)
    return c.set(0, c.dtype(0), Dims{kUnknownDim}), ok();
  if ((*delta)[0] == 0) return make_error("range delta must not be 0");
  double n = std::ceil(((*limit)[0] - (*start)[0]) / (*delta)[0]);
  if (!std::isfinite(n) || n > 1e15) return make_error("range would have {} elements", n);
  c.set(0, c.dtype(0), Dims{static_cast<int64_t>(std::max(0.0, n))});
  return ok();
}

Expected<void> rule_rnn(Ctx& c) {
  const Dims* x = c.dims(0);
  int64_t hidden = c.op.int_attr("hidden_size", kUnknownDim);
  if (!known(hidden)) {
    // hidden_size is optional; R is [dirs, gates*hidden, hidden].
    if (const Dims* r = c.dims(2); r && r->size() == 3) hidden = (*r)[2];
  }
  int64_t dirs = c.op.string_attr("direction", "forward") == "bidirectional" ? 2 : 1;
  bool batch_first = c.op.int_attr("layout", 0) != 0;
  if (!x) return ok();
  if (x->size() != 3)
    return make_error("input must be [seq, batch, features], got {}", ir::shape_to_string(*x));
  int64_t seq = batch_first ? (*x)[1] : (*x)[0], batch = batch_first ? (*x)[0] : (*x)[1];
  c.set(0, c.dtype(0),
        batch_first ? Dims{batch, seq, dirs, hidden} : Dims{seq, dirs, batch, hidden});
  Dims state = batch_first ? Dims{batch, dirs, hidden} : Dims{dirs, batch, hidden};
  c.set(1, c.dtype(0), state);
  c.set(2, c.dtype(0), state);
  return ok();
}

Expected<void> rule_layer_norm(Ctx& c) {
  same_as_input(c);
  const Dims* x = c.dims(0);
  if (!x) return ok();
  PLANNER_TRY_ASSIGN(size_t axis, norm_axis(c.op.int_attr("axis", -1), x->size()));
  Dims stat = *x;
  for (size_t k = axis; k < stat.size(); ++k) stat[k] = 1;
  auto stash = ir::dtype_from_onnx(static_cast<int32_t>(c.op.int_attr("stash_type", 1)));
  c.set(1, stash, stat);
  c.set(2, stash, stat);
  return ok();
}

Expected<void> rule_batch_norm(Ctx& c) {
  same_as_input(c);
  const Dims* scale = c.dims(1);
  for (size_t i = 1; i < c.out.size(); ++i)
    c.set(i, c.dtype(1), scale ? std::optional<Dims>(*scale) : std::nullopt);
  return ok();
}

Expected<void> rule_dropout(Ctx& c) {
  same_as_input(c);
  c.set(1, ir::DType::kBool, c.dims(0) ? std::optional<Dims>(*c.dims(0)) : std::nullopt);
  return ok();
}

Expected<void> rule_global_pool(Ctx& c) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, c.dtype(0), std::nullopt), ok();
  if (x->size() < 2) return make_error("input must have a batch and a channel axis");
  Dims out = *x;
  for (size_t k = 2; k < out.size(); ++k) out[k] = 1;
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_resize(Ctx& c) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, c.dtype(0), std::nullopt), ok();
  // Resize (opset 11+): X, roi, scales, sizes; Upsample: X, scales.
  size_t scales_at = c.op.op_type == "Upsample" ? 1 : 2;
  if (auto sizes = c.ints(3); sizes && !sizes->empty()) {
    if (sizes->size() != x->size()) return make_error("sizes has the wrong length");
    c.set(0, c.dtype(0), *sizes);
    return ok();
  }
  auto scales = c.floats(scales_at);
  if (!scales || scales->empty()) return c.set(0, c.dtype(0), Dims(x->size(), kUnknownDim)), ok();
  if (scales->size() != x->size()) return make_error("scales has the wrong length");
  Dims out = *x;
  for (size_t k = 0; k < out.size(); ++k) {
    if (!known(out[k])) {
      out[k] = kUnknownDim;
      continue;
    }
    double size = std::floor(static_cast<double>(out[k]) * (*scales)[k]);
    if (!(size >= 0 && size <= 9.0e15))
      return make_error("scales[{}] = {} gives no valid output size", k, (*scales)[k]);
    out[k] = static_cast<int64_t>(size);
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_depth_space(Ctx& c, bool to_space) {
  const Dims* x = c.dims(0);
  if (!x) return c.set(0, c.dtype(0), std::nullopt), ok();
  if (x->size() != 4) return make_error("input must be [N,C,H,W]");
  int64_t b = c.op.int_attr("blocksize", 1);
  if (b <= 0) return make_error("blocksize must be positive");
  auto mul = [](int64_t d, int64_t f) { return known(d) ? d * f : kUnknownDim; };
  auto div = [](int64_t d, int64_t f) { return known(d) ? d / f : kUnknownDim; };
  Dims out = *x;
  if (to_space) {  // DepthToSpace: channels into blocks of the spatial axes
    out = {out[0], div(out[1], b * b), mul(out[2], b), mul(out[3], b)};
  } else {
    out = {out[0], mul(out[1], b * b), div(out[2], b), div(out[3], b)};
  }
  c.set(0, c.dtype(0), out);
  return ok();
}

Expected<void> rule_topk(Ctx& c) {
  const Dims* x = c.dims(0);
  auto k = c.ints(1);
  if (!x) return ok();
  PLANNER_TRY_ASSIGN(size_t axis, norm_axis(c.op.int_attr("axis", -1), x->size()));
  Dims out = *x;
  out[axis] = k && k->size() == 1 ? (*k)[0] : kUnknownDim;
  c.set(0, c.dtype(0), out);
  c.set(1, ir::DType::kInt64, out);
  return ok();
}

// OneHot: the indices' shape with the depth (a constant input) inserted at `axis`, in the
// values' type.
Expected<void> rule_one_hot(Ctx& c) {
  const Dims* x = c.dims(0);
  auto depth = c.ints(1);
  if (!x) return ok();
  PLANNER_TRY_ASSIGN(size_t axis, norm_axis(c.op.int_attr("axis", -1), x->size() + 1));
  Dims out = *x;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis),
             depth && depth->size() == 1 ? (*depth)[0] : kUnknownDim);
  c.set(0, c.dtype(2), out);
  return ok();
}

// NegativeLogLikelihoodLoss: the target's shape unreduced, else a scalar, in the input's type.
Expected<void> rule_nll_loss(Ctx& c) {
  const bool none = c.op.string_attr("reduction", "mean") == "none";
  if (none) {
    const Dims* t = c.dims(1);
    if (!t) return ok();
    c.set(0, c.dtype(0), *t);
  } else {
    c.set(0, c.dtype(0), Dims{});
  }
  return ok();
}

using Rule = std::function<Expected<void>(Ctx&)>;

// The rule table: op type -> rule. Readable in one place, like a registry .def file.
const std::unordered_map<std::string, Rule>& rules() {
  static const std::unordered_map<std::string, Rule> table = [] {
    std::unordered_map<std::string, Rule> t;
    auto same = [](Ctx& c) -> Expected<void> { return same_as_input(c), ok(); };
    for (const char* op : {"Relu",
                           "Sigmoid",
                           "Tanh",
                           "Erf",
                           "Exp",
                           "Log",
                           "Sqrt",
                           "Neg",
                           "Abs",
                           "Reciprocal",
                           "Floor",
                           "Ceil",
                           "Round",
                           "Sign",
                           "Sin",
                           "Cos",
                           "Tan",
                           "Asin",
                           "Acos",
                           "Atan",
                           "Sinh",
                           "Cosh",
                           "Asinh",
                           "Acosh",
                           "Atanh",
                           "Not",
                           "LeakyRelu",
                           "Elu",
                           "Selu",
                           "Celu",
                           "HardSigmoid",
                           "HardSwish",
                           "Softplus",
                           "Softsign",
                           "ThresholdedRelu",
                           "Shrink",
                           "Mish",
                           "Identity",
                           "Softmax",
                           "LogSoftmax",
                           "Hardmax",
                           "LRN",
                           "InstanceNormalization",
                           "Clip",
                           "CumSum",
                           "Trilu",
                           "ScatterND",
                           "ScatterElements",
                           "IsNaN",
                           "IsInf",
                           "MeanVarianceNormalization",
                           "Gelu",
                           "BitwiseNot"})
      t[op] = same;
    for (const char* op : {"Add",
                           "Sub",
                           "Mul",
                           "Div",
                           "Pow",
                           "Mod",
                           "Equal",
                           "Less",
                           "Greater",
                           "LessOrEqual",
                           "GreaterOrEqual",
                           "And",
                           "Or",
                           "Xor",
                           "Where",
                           "Max",
                           "Min",
                           "Sum",
                           "Mean",
                           "PRelu",
                           "BitShift",
                           "BitwiseAnd",
                           "BitwiseOr",
                           "BitwiseXor"})
      t[op] = rule_broadcast;
    t["Cast"] = [](Ctx& c) -> Expected<void> {
      same_as_input(c);
      c.out[0].dtype = ir::dtype_from_onnx(static_cast<int32_t>(c.op.int_attr("to", 0)));
      if (!c.out[0].dtype)
        return make_error("unsupported target element type {}", c.op.int_attr("to", 0));
      return ok();
    };
    t["CastLike"] = [](Ctx& c) -> Expected<void> {
      same_as_input(c);
      c.out[0].dtype = c.dtype(1);
      return ok();
    };
    t["MatMul"] = rule_matmul;
    t["Gemm"] = rule_gemm;
    t["Conv"] = [](Ctx& c) { return rule_conv_or_pool(c, true); };
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"})
      t[op] = [](Ctx& c) { return rule_conv_or_pool(c, false); };
    t["ConvTranspose"] = rule_conv_transpose;
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
      t[op] = rule_global_pool;
    t["Reshape"] = rule_reshape;
    t["Flatten"] = rule_flatten;
    t["Transpose"] = rule_transpose;
    t["Squeeze"] = rule_squeeze;
    t["Unsqueeze"] = rule_unsqueeze;
    t["Concat"] = rule_concat;
    t["Split"] = rule_split;
    t["Slice"] = rule_slice;
    t["Gather"] = rule_gather;
    t["GatherElements"] = [](Ctx& c) -> Expected<void> {
      c.set(0, c.dtype(0), c.dims(1) ? std::optional<Dims>(*c.dims(1)) : std::nullopt);
      return ok();
    };
    t["Expand"] = rule_expand;
    t["Tile"] = rule_tile;
    t["Pad"] = rule_pad;
    for (const char* op :
         {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
      t[op] = rule_reduce;
    t["ArgMax"] = rule_argminmax;
    t["ArgMin"] = rule_argminmax;
    t["Shape"] = rule_shape;
    t["Size"] = [](Ctx& c) -> Expected<void> { return c.set(0, ir::DType::kInt64, Dims{}), ok(); };
    t["ConstantOfShape"] = rule_constant_of_shape;
    t["Range"] = rule_range;
    for (const char* op : {"LSTM", "GRU", "RNN"}) t[op] = rule_rnn;
    t["LayerNormalization"] = rule_layer_norm;
    t["BatchNormalization"] = rule_batch_norm;
    t["Dropout"] = rule_dropout;
    t["Resize"] = rule_resize;
    t["Upsample"] = rule_resize;
    t["DepthToSpace"] = [](Ctx& c) { return rule_depth_space(c, true); };
    t["SpaceToDepth"] = [](Ctx& c) { return rule_depth_space(c, false); };
    t["TopK"] = rule_topk;
    t["OneHot"] = rule_one_hot;
    t["NegativeLogLikelihoodLoss"] = rule_nll_loss;
    return t;
  }();
  return table;
}

}  // namespace

Expected<std::vector<PartialType>> infer_output_types(const ir::Op& op,
                                                      std::span<const PartialType> inputs,
                                                      std::span<const ir::Tensor* const> values) {
  Ctx c{op, inputs, values, std::vector<PartialType>(op.outputs.size())};
  if (!op.domain.empty() && op.domain != "ai.onnx") return c.out;
  auto it = rules().find(op.op_type);
  if (it == rules().end()) return c.out;
  PLANNER_TRY(it->second(c));
  return std::move(c.out);
}

}  // namespace planner::importers
