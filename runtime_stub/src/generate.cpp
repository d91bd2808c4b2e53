// The generator kernels: Range, ConstantOfShape, Constant and Shape (outputs computed from
// attributes, scalars and shapes rather than moved from an input).
#include <algorithm>
#include <cmath>
#include <variant>

#include "shape_ops.h"

namespace planner::rt::kernels {

RangeSpec range_spec(const KernelContext& ctx) {
  const Tensor& s = ctx.in(0);
  const Tensor& l = ctx.in(1);
  const Tensor& d = ctx.in(2);
  if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1)
    ctx.fail("start, limit and delta must be scalars");
  if (s.dtype != l.dtype || s.dtype != d.dtype) ctx.fail("start, limit and delta differ in type");
  RangeSpec r;
  r.dtype = s.dtype;
  if (s.dtype == DType::kInt64 || s.dtype == DType::kInt32) {
    const int64_t a = static_cast<int64_t>(load_as_double(s, 0)),
                  b = static_cast<int64_t>(load_as_double(l, 0)),
                  st = static_cast<int64_t>(load_as_double(d, 0));
    if (st == 0) ctx.fail("delta must be non-zero");
    const int64_t n = st > 0 ? (b - a + st - 1) / st : (a - b + (-st) - 1) / (-st);
    r.n = std::max<int64_t>(n, 0);
    r.start = a;
    r.delta = st;
  } else {
    ctx.expect_dtype(s, DType::kFloat32, "start");
    const float a = s.as<float>()[0], b = l.as<float>()[0], st = d.as<float>()[0];
    if (st == 0) ctx.fail("delta must be non-zero");
    r.n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((b - a) / st)));
    r.fstart = a;
    r.fdelta = st;
  }
  ctx.expect_out(0, r.dtype, {r.n});
  return r;
}

void k_range(const KernelContext& ctx) {
  const RangeSpec r = range_spec(ctx);
  const Tensor& y = ctx.out(0);
  if (r.dtype != DType::kFloat32) {
    for (int64_t i = 0; i < r.n; ++i)
      store_from_double(y, i, static_cast<double>(r.start + i * r.delta));
    return;
  }
  float* yp = y.as<float>();
  // ONNX defines output[i] = start + i * delta (not a running sum).
  for (int64_t i = 0; i < r.n; ++i) yp[i] = r.fstart + static_cast<float>(i) * r.fdelta;
}

double constant_of_shape_value(const KernelContext& ctx) {
  // The ONNX "value" tensor attribute arrives as a scalar attribute (int or float); its type
  // is the output's.
  Shape shape = ctx.ints_of(ctx.in(0), "input");
  for (int64_t d : shape)
    if (d < 0) ctx.fail("negative dimension in " + shape_to_string(shape));
  ctx.expect_out_shape(0, shape);
  if (ctx.out(0).dtype == DType::kFloat16) ctx.fail("f16 output is not supported");
  return ctx.attr_float("value", 0.0);
}

void k_constant_of_shape(const KernelContext& ctx) {
  const double v = constant_of_shape_value(ctx);
  const Tensor& y = ctx.out(0);
  for (int64_t i = 0; i < y.numel(); ++i) store_from_double(y, i, v);
}

void k_constant(const KernelContext& ctx) {
  // The value comes from value_float(s) / value_int(s), or from "value" (ONNX's tensor
  // attribute, handed over by the launcher as a scalar or a flat list); the output's type and
  // shape are the tensor's.
  const Tensor& y = ctx.out(0);
  if (y.dtype == DType::kFloat16) ctx.fail("f16 output is not supported");
  std::vector<double> values;
  bool found = false;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    auto it = ctx.attrs.find(name);
    if (it == ctx.attrs.end()) continue;
    if (found) ctx.fail("more than one value attribute");
    found = true;
    if (auto* v = std::get_if<int64_t>(&it->second))
      values = {static_cast<double>(*v)};
    else if (auto* v = std::get_if<double>(&it->second))
      values = {*v};
    else if (auto* v = std::get_if<std::vector<int64_t>>(&it->second))
      for (int64_t e : *v) values.push_back(static_cast<double>(e));
    else if (auto* v = std::get_if<std::vector<double>>(&it->second))
      values = *v;
    else
      ctx.fail(std::string("attribute '") + name + "' must be numeric");
  }
  if (!found) ctx.fail("needs a value attribute (value, value_float(s) or value_int(s))");
  if (static_cast<int64_t>(values.size()) != y.numel())
    ctx.fail("the value has " + std::to_string(values.size()) + " elements, the output " +
             shape_to_string(y.shape) + " holds " + std::to_string(y.numel()));
  if (y.dtype == DType::kInt64) {
    // integers above 2^53 must survive: read them without the double round trip
    for (const char* name : {"value", "value_int", "value_ints"}) {
      auto it = ctx.attrs.find(name);
      if (it == ctx.attrs.end()) continue;
      if (auto* v = std::get_if<int64_t>(&it->second)) y.as<int64_t>()[0] = *v;
      if (auto* v = std::get_if<std::vector<int64_t>>(&it->second))
        std::copy(v->begin(), v->end(), y.as<int64_t>());
      if (std::holds_alternative<int64_t>(it->second) ||
          std::holds_alternative<std::vector<int64_t>>(it->second))
        return;
    }
  }
  for (size_t i = 0; i < values.size(); ++i)
    store_from_double(y, static_cast<int64_t>(i), values[i]);
}

void k_shape(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t r = x.rank();
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  const int64_t n = std::max<int64_t>(0, end - start);
  ctx.expect_out(0, DType::kInt64, {n});
  int64_t* y = ctx.out(0).as<int64_t>();
  for (int64_t i = 0; i < n; ++i) y[i] = x.shape[static_cast<size_t>(start + i)];
}

}  // namespace planner::rt::kernels
