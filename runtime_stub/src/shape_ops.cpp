// Data-movement kernels (any element type, copied as bytes): Transpose, Reshape, Flatten,
// Squeeze, Unsqueeze, Concat, Split, Slice, Pad, Expand, Tile, Gather, and the gradients
// SliceGrad, PadGrad, GatherGrad, ZerosLike. The generators are in generate.cpp.
#include <algorithm>
#include <cstring>

#include "copy_plan.h"
#include "kernel_util.h"
#include "planner_rt/half.h"
#include "shape_ops.h"

namespace planner::rt::kernels {

namespace {

// Calls f(out_index, in_offset) over `out` in row-major order, where in_offset = base +
// sum(idx[d] * strides[d]) (strides may be negative or zero).
template <typename F>
void strided_loop(const Shape& out, int64_t base, const std::vector<int64_t>& strides, F&& f) {
  const int64_t total = num_elements(out);
  if (total == 0) return;
  std::vector<int64_t> idx(out.size(), 0);
  int64_t off = base;
  for (int64_t o = 0; o < total; ++o) {
    f(o, off);
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      const size_t du = static_cast<size_t>(d);
      ++idx[du];
      off += strides[du];
      if (idx[du] < out[du]) break;
      off -= strides[du] * out[du];
      idx[du] = 0;
    }
  }
}

// Calls f(out_index, idx) with the multi-index of every element of `shape`.
template <typename F>
void index_loop(const Shape& shape, F&& f) {
  const int64_t total = num_elements(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    f(o, idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

void copy_same(const KernelContext& ctx, const Shape& shape) {
  const Tensor& x = ctx.in(0);
  ctx.expect_out(0, x.dtype, shape);
  std::memmove(ctx.out(0).data, x.data, x.bytes());
}

// Axes from input `i` (newer opsets) or the attribute "axes" (older ones).
std::vector<int64_t> axes_arg(const KernelContext& ctx, size_t i, const char* attr = "axes") {
  if (ctx.has_in(i)) return ctx.ints_of(ctx.in(i), "axes");
  return ctx.attr_ints(attr);
}

}  // namespace

void k_transpose(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) {
    perm.resize(x.shape.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
  }
  if (perm.size() != x.shape.size())
    ctx.fail("perm has " + std::to_string(perm.size()) + " entries for rank " +
             std::to_string(x.rank()));
  std::vector<bool> seen(perm.size(), false);
  Shape out;
  std::vector<int64_t> in_st = strides_of(x.shape), st;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[static_cast<size_t>(p)])
      ctx.fail("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    out.push_back(x.shape[static_cast<size_t>(p)]);
    st.push_back(in_st[static_cast<size_t>(p)]);
  }
  ctx.expect_out(0, x.dtype, out);
  const size_t es = dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  strided_loop(out, 0, st,
               [&](int64_t o, int64_t i) { std::memcpy(dst + o * es, src + i * es, es); });
}

void k_reshape(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> spec = ctx.ints_of(ctx.in(1), "shape");
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  Shape out;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= x.shape.size())
        ctx.fail("shape entry 0 at " + std::to_string(i) + " has no input dimension to copy");
      d = x.shape[i];
    } else if (d == -1) {
      if (infer >= 0) ctx.fail("shape has more than one -1");
      infer = static_cast<int64_t>(i);
      out.push_back(1);
      continue;
    } else if (d < 0) {
      ctx.fail("shape entry " + std::to_string(d) + " is invalid");
    }
    out.push_back(d);
    known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      ctx.fail("cannot infer -1 reshaping " + shape_to_string(x.shape) + " to " +
               shape_to_string(spec));
    out[static_cast<size_t>(infer)] = x.numel() / known;
  }
  if (num_elements(out) != x.numel())
    ctx.fail("cannot reshape " + shape_to_string(x.shape) + " to " + shape_to_string(out));
  copy_same(ctx, out);
}

void k_flatten(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -x.rank() || axis > x.rank())
    ctx.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += x.rank();
  int64_t a = 1;
  for (int64_t i = 0; i < axis; ++i) a *= x.shape[static_cast<size_t>(i)];
  copy_same(ctx, {a, a == 0 ? 0 : x.numel() / a});
}

void k_squeeze(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> axes = axes_arg(ctx, 1);
  std::vector<bool> drop(x.shape.size(), false);
  for (int64_t a : axes) {
    int64_t n = ctx.norm_axis(a, x.rank());
    if (x.shape[static_cast<size_t>(n)] != 1)
      ctx.fail("cannot squeeze axis " + std::to_string(a) + " of extent " +
               std::to_string(x.shape[static_cast<size_t>(n)]));
    drop[static_cast<size_t>(n)] = true;
  }
  Shape out;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (!(axes.empty() ? x.shape[i] == 1 : drop[i])) out.push_back(x.shape[i]);
  copy_same(ctx, out);
}

void k_unsqueeze(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> axes = axes_arg(ctx, 1);
  const int64_t r = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    int64_t n = ctx.norm_axis(a, r);
    if (inserted[static_cast<size_t>(n)]) ctx.fail("axis " + std::to_string(a) + " is repeated");
    inserted[static_cast<size_t>(n)] = true;
  }
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i)
    out.push_back(inserted[static_cast<size_t>(i)] ? 1 : x.shape[k++]);
  copy_same(ctx, out);
}

Shape concat_shape(const KernelContext& ctx, int64_t* axis_out) {
  if (ctx.inputs.empty()) ctx.fail("needs at least one input");
  const Tensor& first = ctx.in(0);
  const int64_t axis = ctx.norm_axis(ctx.attr_int("axis", 0), first.rank());
  Shape out = first.shape;
  out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& t = ctx.in(i);
    Shape a = t.shape, b = first.shape;
    if (t.dtype != first.dtype || a.size() != b.size())
      ctx.fail("input " + std::to_string(i) + " does not match input 0");
    a[static_cast<size_t>(axis)] = b[static_cast<size_t>(axis)] = 0;
    if (a != b)
      ctx.fail("input " + std::to_string(i) + " has shape " + shape_to_string(t.shape) +
               ", incompatible with " + shape_to_string(first.shape));
    out[static_cast<size_t>(axis)] += t.shape[static_cast<size_t>(axis)];
  }
  *axis_out = axis;
  return out;
}

void k_concat(const KernelContext& ctx) {
  int64_t axis = 0;
  const Shape out = concat_shape(ctx, &axis);
  const Tensor& first = ctx.in(0);
  ctx.expect_out(0, first.dtype, out);
  const size_t es = dtype_size(first.dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= out[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < out.size(); ++i) inner *= out[i];
  const int64_t row = out[static_cast<size_t>(axis)] * inner;
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  int64_t at = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& t = ctx.in(i);
    const int64_t piece = t.shape[static_cast<size_t>(axis)] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (o * row + at) * static_cast<int64_t>(es),
                  static_cast<const uint8_t*>(t.data) + o * piece * static_cast<int64_t>(es),
                  static_cast<size_t>(piece) * es);
    at += piece;
  }
}

std::vector<int64_t> split_sizes(const KernelContext& ctx, const Tensor& x, int64_t* axis_out) {
  const int64_t axis = ctx.norm_axis(ctx.attr_int("axis", 0), x.rank());
  const int64_t dim = x.shape[static_cast<size_t>(axis)];
  const int64_t n = static_cast<int64_t>(ctx.outputs.size());
  if (n == 0) ctx.fail("needs at least one output");
  std::vector<int64_t> sizes =
      ctx.has_in(1) ? ctx.ints_of(ctx.in(1), "split") : ctx.attr_ints("split");
  if (sizes.empty()) {
    // Equal pieces; opset 18 lets the last one be smaller.
    const int64_t piece = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(piece, dim - i * piece)));
  }
  if (static_cast<int64_t>(sizes.size()) != n)
    ctx.fail("split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(n) +
             " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("split sizes must be non-negative");
    total += s;
  }
  if (total != dim)
    ctx.fail("split sizes sum to " + std::to_string(total) + ", not the axis extent " +
             std::to_string(dim));
  for (int64_t k = 0; k < n; ++k) {
    Shape s = x.shape;
    s[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(k)];
    ctx.expect_out(static_cast<size_t>(k), x.dtype, s);
  }
  *axis_out = axis;
  return sizes;
}

void k_split(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = 0;
  const std::vector<int64_t> sizes = split_sizes(ctx, x, &axis);
  const int64_t dim = x.shape[static_cast<size_t>(axis)];
  const int64_t n = static_cast<int64_t>(sizes.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < x.shape.size(); ++i) inner *= x.shape[i];
  const size_t es = dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  int64_t at = 0;
  for (int64_t k = 0; k < n; ++k) {
    auto* dst = static_cast<uint8_t*>(ctx.out(static_cast<size_t>(k)).data);
    const int64_t piece = sizes[static_cast<size_t>(k)] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + o * piece * static_cast<int64_t>(es),
                  src + (o * dim * inner + at) * static_cast<int64_t>(es),
                  static_cast<size_t>(piece) * es);
    at += piece;
  }
}

SliceRegion slice_region(const KernelContext& ctx, const Shape& x, size_t first_input) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.has_in(first_input)) {  // opset 10+: inputs
    starts = ctx.ints_of(ctx.in(first_input), "starts");
    ends = ctx.ints_of(ctx.in(first_input + 1), "ends");
    if (ctx.has_in(first_input + 2)) axes = ctx.ints_of(ctx.in(first_input + 2), "axes");
    if (ctx.has_in(first_input + 3)) steps = ctx.ints_of(ctx.in(first_input + 3), "steps");
  } else {  // opset 1: attributes
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps differ in length");
  SliceRegion r;
  r.start.assign(x.size(), 0);
  r.step.assign(x.size(), 1);
  r.extent = x;
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = ctx.norm_axis(axes[i], static_cast<int64_t>(x.size()));
    if (seen[static_cast<size_t>(a)]) ctx.fail("axis " + std::to_string(axes[i]) + " is repeated");
    seen[static_cast<size_t>(a)] = true;
    const int64_t dim = x[static_cast<size_t>(a)], step = steps[i];
    if (step == 0) ctx.fail("steps must be non-zero");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;  // no overflow: dim > 0 and s < 0
    if (e < 0) e += dim;
    int64_t n = 0;
    if (dim > 0 && step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > s ? 1 + (e - s - 1) / step : 0;
    } else if (dim > 0) {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = s > e ? 1 + (s - e - 1) / (step == INT64_MIN ? INT64_MAX : -step) : 0;
    } else {
      s = 0;
    }
    r.start[static_cast<size_t>(a)] = s;
    r.step[static_cast<size_t>(a)] = step;
    r.extent[static_cast<size_t>(a)] = std::max<int64_t>(0, n);
  }
  return r;
}

// Strides and base offset with which the slice's element idx sits in X.
void slice_strides(const SliceRegion& r, const Shape& x, int64_t* base, std::vector<int64_t>* st) {
  std::vector<int64_t> xs = strides_of(x);
  *base = 0;
  st->clear();
  for (size_t d = 0; d < x.size(); ++d) {
    if (r.extent[d] > 0) *base += r.start[d] * xs[d];
    st->push_back(r.step[d] * xs[d]);
  }
}

// Slice, SliceGrad, constant Pad and PadGrad, Expand and Tile run their copy plans
// (copy_plan.h) here as on the cuda backend, so every cpu run checks the device's index logic.
namespace {

void run_plan(const KernelContext& ctx, const CopyPlan& plan, const Tensor& x, const Tensor& y,
              const void* fill = nullptr) {
  run_copy_plan_on_host(plan, {x.data}, {y.data}, {y.numel()}, dtype_size(x.dtype), fill);
}

}  // namespace

void k_slice(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  SliceRegion r = slice_region(ctx, x.shape, 1);
  ctx.expect_out(0, x.dtype, r.extent);
  CopyPlan plan;
  if (slice_plan(x.shape, r, &plan)) return run_plan(ctx, plan, x, ctx.out(0));
  int64_t base;
  std::vector<int64_t> st;
  slice_strides(r, x.shape, &base, &st);
  const size_t es = dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  strided_loop(r.extent, base, st,
               [&](int64_t o, int64_t i) { std::memcpy(dst + o * es, src + i * es, es); });
}

void k_slice_grad(const KernelContext& ctx) {
  // Inputs (dY, starts, ends[, axes][, steps]) or Slice's attributes; dX has X's shape.
  const Tensor& dy = ctx.in(0);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  SliceRegion r = slice_region(ctx, dx.shape, 1);
  if (dy.shape != r.extent)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " +
             shape_to_string(r.extent));
  CopyPlan plan;
  if (slice_grad_plan(dx.shape, r, &plan)) return run_plan(ctx, plan, dy, dx);
  int64_t base;
  std::vector<int64_t> st;
  slice_strides(r, dx.shape, &base, &st);
  float* d = dx.as<float>();
  std::fill(d, d + dx.numel(), 0.0f);
  const float* g = dy.as<float>();
  strided_loop(r.extent, base, st, [&](int64_t o, int64_t i) { d[i] += g[o]; });
}

PadSpec pad_spec(const KernelContext& ctx, const Shape& x, const Tensor* pads_in,
                 const Tensor* axes_in) {
  PadSpec p;
  std::string mode = ctx.attr_string("mode", "constant");
  if (mode == "constant")
    p.mode = PadMode::kConstant;
  else if (mode == "reflect")
    p.mode = PadMode::kReflect;
  else if (mode == "edge")
    p.mode = PadMode::kEdge;
  else if (mode == "wrap")
    p.mode = PadMode::kWrap;
  else
    ctx.fail("unknown mode \"" + mode + "\"");
  std::vector<int64_t> pads = pads_in ? ctx.ints_of(*pads_in, "pads") : ctx.attr_ints("pads");
  const int64_t r = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes;
  if (axes_in)
    axes = ctx.ints_of(*axes_in, "axes");
  else
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads has " + std::to_string(pads.size()) + " entries for " +
             std::to_string(axes.size()) + " axes");
  p.begin.assign(x.size(), 0);
  p.end.assign(x.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = static_cast<size_t>(ctx.norm_axis(axes[i], r));
    p.begin[a] = pads[i];
    p.end[a] = pads[axes.size() + i];
  }
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t o = x[d] + p.begin[d] + p.end[d];
    if (o < 0) ctx.fail("pads crop axis " + std::to_string(d) + " below zero");
    if (p.mode != PadMode::kConstant && x[d] == 0 && o > 0)
      ctx.fail("cannot pad an empty axis in mode " + mode);
    if (p.mode == PadMode::kReflect && (p.begin[d] >= x[d] || p.end[d] >= x[d]) && x[d] > 1 &&
        (p.begin[d] > 0 || p.end[d] > 0))
      ctx.fail("reflect pads must be smaller than the axis extent " + std::to_string(x[d]));
    p.out.push_back(o);
  }
  return p;
}

PadGeom pad_geom(const KernelContext& ctx, const PadSpec& p, const Shape& x) {
  PadGeom g;
  g.rank = static_cast<int>(x.size());
  g.mode = static_cast<int>(p.mode);
  if (x.size() > static_cast<size_t>(kCopyMaxDims))
    ctx.fail(std::to_string(x.size()) + " dimensions, at most " + std::to_string(kCopyMaxDims) +
             " supported");
  for (size_t d = 0; d < x.size(); ++d) {
    g.out[d] = p.out[d];
    g.in[d] = x[d];
    g.begin[d] = p.begin[d];
  }
  return g;
}

uint64_t pad_fill_bits(DType dtype, double value) {
  uint64_t bits = 0;
  if (dtype == DType::kFloat16) {
    const uint16_t h = f32_to_f16(static_cast<float>(value));
    std::memcpy(&bits, &h, 2);
  } else if (dtype == DType::kBFloat16) {
    const uint16_t h = f32_to_bf16(static_cast<float>(value));
    std::memcpy(&bits, &h, 2);
  } else {
    store_from_double(Tensor(dtype, {}, &bits), 0, value);
  }
  return bits;
}

namespace {

// Calls f(out_index, x_offset or -1) for every element of the padded output.
template <typename F>
void pad_loop(const KernelContext& ctx, const PadSpec& p, const Shape& x, F&& f) {
  const PadGeom g = pad_geom(ctx, p, x);
  for (int64_t o = 0; o < num_elements(p.out); ++o) f(o, pad_read_offset(g, o));
}

}  // namespace

void k_pad(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  PadSpec p = pad_spec(ctx, x.shape, ctx.has_in(1) ? &ctx.in(1) : nullptr,
                       ctx.has_in(3) ? &ctx.in(3) : nullptr);
  ctx.expect_out(0, x.dtype, p.out);
  const Tensor& y = ctx.out(0);
  double value = ctx.attr_float("value", 0.0);
  if (ctx.has_in(2)) {
    if (ctx.in(2).numel() != 1) ctx.fail("constant_value must be a scalar");
    value = load_as_double(ctx.in(2), 0);
  }
  const size_t es = dtype_size(x.dtype);
  const uint64_t fill_bits = pad_fill_bits(x.dtype, value);
  std::vector<uint8_t> fill(reinterpret_cast<const uint8_t*>(&fill_bits),
                            reinterpret_cast<const uint8_t*>(&fill_bits) + es);
  CopyPlan plan;
  if (pad_plan(x.shape, p, &plan)) return run_plan(ctx, plan, x, y, fill.data());
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  pad_loop(ctx, p, x.shape, [&](int64_t o, int64_t i) {
    std::memcpy(dst + o * es, i < 0 ? fill.data() : src + i * es, es);
  });
}

void k_pad_grad(const KernelContext& ctx) {
  // Inputs (dY, pads[, constant_value][, axes]) or Pad's attributes, mode; dX has X's shape.
  // Each dY element goes back to the X element the forward pass copied it from (summed).
  const Tensor& dy = ctx.in(0);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  PadSpec p = pad_spec(ctx, dx.shape, ctx.has_in(1) ? &ctx.in(1) : nullptr,
                       ctx.has_in(3) ? &ctx.in(3) : nullptr);
  if (dy.shape != p.out)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " + shape_to_string(p.out));
  CopyPlan plan;
  if (pad_grad_plan(dx.shape, p, &plan)) return run_plan(ctx, plan, dy, dx);
  float* d = dx.as<float>();
  std::fill(d, d + dx.numel(), 0.0f);
  const float* g = dy.as<float>();
  pad_loop(ctx, p, dx.shape, [&](int64_t o, int64_t i) {
    if (i >= 0) d[i] += g[o];
  });
}

void k_expand(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Shape target = ctx.ints_of(ctx.in(1), "shape");
  Shape out = ctx.broadcast({x.shape, target});
  ctx.expect_out(0, x.dtype, out);
  CopyPlan plan;
  if (expand_plan(x.shape, out, &plan)) return run_plan(ctx, plan, x, ctx.out(0));
  const size_t es = dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  strided_loop(out, 0, broadcast_strides(x.shape, out),
               [&](int64_t o, int64_t i) { std::memcpy(dst + o * es, src + i * es, es); });
}

Shape tile_shape(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& reps) {
  if (reps.size() != x.shape.size())
    ctx.fail("repeats has " + std::to_string(reps.size()) + " entries for rank " +
             std::to_string(x.rank()));
  Shape out;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 0) ctx.fail("repeats must be non-negative");
    out.push_back(x.shape[i] * reps[i]);
  }
  return out;
}

void k_tile(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> reps = ctx.ints_of(ctx.in(1), "repeats");
  const Shape out = tile_shape(ctx, x, reps);
  ctx.expect_out(0, x.dtype, out);
  CopyPlan plan;
  if (tile_plan(x.shape, reps, &plan)) return run_plan(ctx, plan, x, ctx.out(0));
  const size_t es = dtype_size(x.dtype);
  std::vector<int64_t> xs = strides_of(x.shape);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  index_loop(out, [&](int64_t o, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] % x.shape[d]) * xs[d];
    std::memcpy(dst + o * es, src + off * es, es);
  });
}

GatherShapes gather_shapes(const KernelContext& ctx, const Shape& data, const Tensor& indices) {
  GatherShapes g;
  if (data.empty()) ctx.fail("data must have rank >= 1");
  g.axis = ctx.norm_axis(ctx.attr_int("axis", 0), static_cast<int64_t>(data.size()));
  g.outer = 1;
  g.inner = 1;
  for (int64_t i = 0; i < g.axis; ++i) g.outer *= data[static_cast<size_t>(i)];
  g.dim = data[static_cast<size_t>(g.axis)];
  for (size_t i = static_cast<size_t>(g.axis) + 1; i < data.size(); ++i) g.inner *= data[i];
  g.count = indices.numel();
  g.out.assign(data.begin(), data.begin() + g.axis);
  g.out.insert(g.out.end(), indices.shape.begin(), indices.shape.end());
  g.out.insert(g.out.end(), data.begin() + g.axis + 1, data.end());
  return g;
}

std::vector<int64_t> checked_indices(const KernelContext& ctx, const Tensor& indices, int64_t dim) {
  std::vector<int64_t> idx = ctx.ints_of(indices, "indices");
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim)
      ctx.fail("index " + std::to_string(i) + " is out of range for extent " + std::to_string(dim));
    if (i < 0) i += dim;
  }
  return idx;
}

void k_gather(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  GatherShapes g = gather_shapes(ctx, x.shape, ind);
  ctx.expect_out(0, x.dtype, g.out);
  std::vector<int64_t> idx = checked_indices(ctx, ind, g.dim);
  const size_t es = dtype_size(x.dtype);
  const size_t block = static_cast<size_t>(g.inner) * es;
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t k = 0; k < g.count; ++k)
      std::memcpy(dst + (static_cast<size_t>(o * g.count + k)) * block,
                  src + static_cast<size_t>(o * g.dim + idx[static_cast<size_t>(k)]) * block,
                  block);
}

void k_gather_grad(const KernelContext& ctx) {
  // Inputs (dY, indices), attribute axis; dX has the data's shape. Repeated indices add up,
  // in index order.
  const Tensor& dy = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  GatherShapes g = gather_shapes(ctx, dx.shape, ind);
  if (dy.shape != g.out)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " + shape_to_string(g.out));
  std::vector<int64_t> idx = checked_indices(ctx, ind, g.dim);
  float* d = dx.as<float>();
  std::fill(d, d + dx.numel(), 0.0f);
  const float* gy = dy.as<float>();
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t k = 0; k < g.count; ++k) {
      float* dst = d + (o * g.dim + idx[static_cast<size_t>(k)]) * g.inner;
      const float* src = gy + (o * g.count + k) * g.inner;
      for (int64_t i = 0; i < g.inner; ++i) dst[i] += src[i];
    }
}

void k_zeros_like(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_out(0, x.dtype, x.shape);
  std::memset(ctx.out(0).data, 0, x.bytes());
}

}  // namespace planner::rt::kernels
