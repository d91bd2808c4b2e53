// ArgMax, ArgMin, Trilu, TopK, CumSum and OneHot: outputs that select from their input by
// position (select_math.h's bodies, which the cuda kernels run too).
#include "select_math.h"
#include "shape_ops.h"

namespace planner::rt::kernels {

namespace {

template <typename T>
void arg_loop(const Tensor& x, const ArgShapes& s, int64_t* y) {
  const T* p = x.as<T>();
  for (int64_t e = 0; e < s.n; ++e) y[e] = arg_extreme<T>(p, e, s.extent, s.inner, s.max, s.last);
}

}  // namespace

ArgShapes arg_shapes(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.rank() == 0) ctx.fail("needs an input of rank 1 or more");
  const int64_t axis = ctx.norm_axis(ctx.attr_int("axis", 0), x.rank());
  const bool keep = ctx.attr_int("keepdims", 1) != 0;
  ArgShapes s;
  s.max = ctx.op_type == "ArgMax";
  s.last = ctx.attr_int("select_last_index", 0) != 0;
  s.extent = x.shape[static_cast<size_t>(axis)];
  if (s.extent == 0) ctx.fail("axis " + std::to_string(axis) + " is empty");
  Shape out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d == axis) {
      if (keep) out.push_back(1);
      continue;
    }
    out.push_back(x.shape[static_cast<size_t>(d)]);
    if (d > axis) s.inner *= x.shape[static_cast<size_t>(d)];
  }
  ctx.expect_out(0, DType::kInt64, out);
  s.n = num_elements(out);
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kInt32 && x.dtype != DType::kInt64)
    ctx.fail("unsupported input type " + std::string(dtype_name(x.dtype)));
  return s;
}

void k_arg_extreme(const KernelContext& ctx) {
  const ArgShapes s = arg_shapes(ctx);
  const Tensor& x = ctx.in(0);
  int64_t* y = ctx.out(0).as<int64_t>();
  if (x.dtype == DType::kFloat32)
    arg_loop<float>(x, s, y);
  else if (x.dtype == DType::kInt32)
    arg_loop<int32_t>(x, s, y);
  else
    arg_loop<int64_t>(x, s, y);
}

TriluShapes trilu_shapes(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.rank() < 2) ctx.fail("needs an input of rank 2 or more");
  ctx.expect_out(0, x.dtype, x.shape);
  TriluShapes s;
  s.rows = x.shape[x.shape.size() - 2];
  s.cols = x.shape.back();
  s.upper = ctx.attr_int("upper", 1) != 0;
  if (ctx.has_in(1)) {
    const std::vector<int64_t> k = ctx.ints_of(ctx.in(1), "k");
    if (k.size() != 1) ctx.fail("k must be a scalar");
    s.k = k[0];
  }
  return s;
}

void k_trilu(const KernelContext& ctx) {
  const TriluShapes s = trilu_shapes(ctx);
  const Tensor& x = ctx.in(0);
  const size_t es = dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.out(0).data);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = trilu_keeps((i / s.cols) % s.rows, i % s.cols, s.k, s.upper);
    for (size_t b = 0; b < es; ++b) dst[i * es + b] = keep ? src[i * es + b] : 0;
  }
}

namespace {

// The input viewed as [outer, extent, inner] around `axis`.
void around_axis(const Shape& shape, int64_t axis, int64_t& extent, int64_t& inner,
                 int64_t& outer) {
  extent = shape[static_cast<size_t>(axis)];
  inner = outer = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(d) < axis)
      outer *= shape[d];
    else if (static_cast<int64_t>(d) > axis)
      inner *= shape[d];
}

bool plain_numeric(DType d) {
  return d == DType::kFloat32 || d == DType::kInt32 || d == DType::kInt64;
}

template <typename T>
void topk_loop(const Tensor& x, const TopKShapes& s, const KernelContext& ctx) {
  for (int64_t e = 0; e < s.n; ++e)
    top_k<T>(x.as<T>(), e, s.extent, s.inner, s.k, s.largest, ctx.out(0).as<T>(),
             ctx.out(1).as<int64_t>());
}

template <typename T, typename A>
void cumsum_loop(const Tensor& x, const CumSumShapes& s, const KernelContext& ctx) {
  for (int64_t e = 0; e < s.n; ++e)
    cum_sum<T, A>(x.as<T>(), ctx.out(0).as<T>(), e, s.extent, s.inner, s.exclusive, s.reverse);
}

}  // namespace

TopKShapes topk_shapes(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.rank() == 0) ctx.fail("needs an input of rank 1 or more");
  if (!plain_numeric(x.dtype))
    ctx.fail("unsupported input type " + std::string(dtype_name(x.dtype)));
  const int64_t axis = ctx.norm_axis(ctx.attr_int("axis", -1), x.rank());
  const std::vector<int64_t> k = ctx.ints_of(ctx.in(1), "K");
  if (k.size() != 1) ctx.fail("K must hold one value");
  TopKShapes s;
  int64_t outer = 1;
  around_axis(x.shape, axis, s.extent, s.inner, outer);
  s.k = k[0];
  if (s.k < 0 || s.k > s.extent)
    ctx.fail("K = " + std::to_string(s.k) + " is outside [0, " + std::to_string(s.extent) + "]");
  s.largest = ctx.attr_int("largest", 1) != 0;
  s.n = outer * s.inner;
  Shape out = x.shape;
  out[static_cast<size_t>(axis)] = s.k;
  ctx.expect_out(0, x.dtype, out);
  ctx.expect_out(1, DType::kInt64, out);
  return s;
}

void k_topk(const KernelContext& ctx) {
  const TopKShapes s = topk_shapes(ctx);
  const Tensor& x = ctx.in(0);
  if (x.dtype == DType::kFloat32)
    topk_loop<float>(x, s, ctx);
  else if (x.dtype == DType::kInt32)
    topk_loop<int32_t>(x, s, ctx);
  else
    topk_loop<int64_t>(x, s, ctx);
}

TopKShapes topk_grad_shapes(const KernelContext& ctx) {
  const Tensor& dv = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dv, DType::kFloat32, "dV");
  ctx.expect_dtype(ind, DType::kInt64, "indices");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  if (dx.rank() == 0 || dv.shape != ind.shape || dv.rank() != dx.rank())
    ctx.fail("dV " + shape_to_string(dv.shape) + " and indices " + shape_to_string(ind.shape) +
             " do not fit dX " + shape_to_string(dx.shape));
  const int64_t axis = ctx.norm_axis(ctx.attr_int("axis", -1), dx.rank());
  TopKShapes s;
  int64_t outer = 1;
  around_axis(dx.shape, axis, s.extent, s.inner, outer);
  s.k = dv.shape[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < dx.rank(); ++d)
    if (d != axis && dv.shape[static_cast<size_t>(d)] != dx.shape[static_cast<size_t>(d)])
      ctx.fail("dV " + shape_to_string(dv.shape) + " does not fit dX " + shape_to_string(dx.shape));
  s.n = outer * s.inner;
  return s;
}

void k_topk_grad(const KernelContext& ctx) {
  const TopKShapes s = topk_grad_shapes(ctx);
  for (int64_t e = 0; e < s.n; ++e)
    top_k_grad<float>(ctx.in(0).as<float>(), ctx.in(1).as<int64_t>(), ctx.out(0).as<float>(), e,
                      s.extent, s.inner, s.k);
}

CumSumShapes cumsum_shapes(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.rank() == 0) ctx.fail("needs an input of rank 1 or more");
  if (!plain_numeric(x.dtype))
    ctx.fail("unsupported input type " + std::string(dtype_name(x.dtype)));
  const std::vector<int64_t> axis = ctx.ints_of(ctx.in(1), "axis");
  if (axis.size() != 1) ctx.fail("axis must hold one value");
  CumSumShapes s;
  int64_t outer = 1;
  around_axis(x.shape, ctx.norm_axis(axis[0], x.rank()), s.extent, s.inner, outer);
  s.n = outer * s.inner;
  s.exclusive = ctx.attr_int("exclusive", 0) != 0;
  s.reverse = ctx.attr_int("reverse", 0) != 0;
  ctx.expect_out(0, x.dtype, x.shape);
  return s;
}

void k_cumsum(const KernelContext& ctx) {
  const CumSumShapes s = cumsum_shapes(ctx);
  const Tensor& x = ctx.in(0);
  if (x.dtype == DType::kFloat32)
    cumsum_loop<float, double>(x, s, ctx);
  else if (x.dtype == DType::kInt32)
    cumsum_loop<int32_t, int64_t>(x, s, ctx);
  else
    cumsum_loop<int64_t, int64_t>(x, s, ctx);
}

OneHotShapes one_hot_shapes(const KernelContext& ctx) {
  const Tensor& indices = ctx.in(0);
  const Tensor& values = ctx.in(2);
  if (indices.dtype != DType::kInt64 && indices.dtype != DType::kInt32 &&
      indices.dtype != DType::kFloat32)
    ctx.fail("unsupported indices type " + std::string(dtype_name(indices.dtype)));
  if (values.numel() != 2) ctx.fail("values must hold two elements (off, on)");
  // depth may be any numeric type (the ONNX suite's is a float).
  const Tensor& depth_in = ctx.in(1);
  if (depth_in.numel() != 1) ctx.fail("depth must hold one value");
  const double depth_value = load_as_double(depth_in, 0);
  if (!(depth_value >= 1)) ctx.fail("depth must be positive");
  const std::vector<int64_t> depth = {static_cast<int64_t>(depth_value)};
  const int64_t rank = indices.rank() + 1;
  const int64_t axis = ctx.norm_axis(ctx.attr_int("axis", -1), rank);
  OneHotShapes s;
  s.depth = depth[0];
  Shape out = indices.shape;
  out.insert(out.begin() + axis, s.depth);
  for (int64_t d = axis; d < indices.rank(); ++d) s.inner *= indices.shape[static_cast<size_t>(d)];
  s.n = num_elements(out);
  ctx.expect_out(0, values.dtype, out);
  return s;
}

void k_one_hot(const KernelContext& ctx) {
  const OneHotShapes s = one_hot_shapes(ctx);
  const Tensor& indices = ctx.in(0);
  const Tensor& values = ctx.in(2);
  const size_t es = dtype_size(values.dtype);
  const auto* off_on = static_cast<const uint8_t*>(values.data);
  auto* y = static_cast<uint8_t*>(ctx.out(0).data);
  for (int64_t e = 0; e < s.n; ++e) {
    const int64_t o = e / (s.depth * s.inner), d = (e / s.inner) % s.depth, i = e % s.inner;
    const int64_t at = o * s.inner + i;
    int64_t index = 0;
    if (indices.dtype == DType::kInt64)
      index = indices.as<int64_t>()[at];
    else if (indices.dtype == DType::kInt32)
      index = indices.as<int32_t>()[at];
    else
      index = static_cast<int64_t>(indices.as<float>()[at]);
    const uint8_t* v = off_on + (one_hot_on(index, d, s.depth) ? es : 0);
    for (size_t b = 0; b < es; ++b) y[static_cast<size_t>(e) * es + b] = v[b];
  }
}

}  // namespace planner::rt::kernels
