// ArgMax, ArgMin and Trilu: outputs that select from their input by position (select_math.h's
// bodies, which the cuda kernels run too).
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

}  // namespace planner::rt::kernels
