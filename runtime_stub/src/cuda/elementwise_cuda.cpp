// The cuda backend's element-wise, data-copy and optimizer kernels: the cpu kernels' checks,
// then a launch on the rank's stream. Input types the device kernels do not cover (integer
// arithmetic, casts) go to the host fallback with the cpu kernel.
#include <limits>

#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"
#include "precision_kernels.h"

namespace planner::rt::kernels {

using cuda::Strided;

namespace {

// The Strided descriptor of `out` with each operand read broadcast to it (the cpu kernels'
// broadcast_strides); false when the rank exceeds what the device kernels take.
bool make_strided(const Shape& out, const std::vector<Shape>& operands, Strided* s) {
  if (out.size() > static_cast<size_t>(cuda::kMaxDims) ||
      operands.size() > static_cast<size_t>(cuda::kMaxOperands))
    return false;
  *s = Strided();
  s->rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) s->shape[d] = out[d];
  for (size_t k = 0; k < operands.size(); ++k) {
    if (operands[k].size() > out.size()) return false;
    std::vector<int64_t> st = broadcast_strides(operands[k], out);
    for (size_t d = 0; d < out.size(); ++d) s->strides[k][d] = st[d];
  }
  return true;
}

cudaStream_t stream() {
  return cuda::context().stream;
}

void device_copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  PLANNER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()));
}

// A scalar input's value, read from the device (Clip's min/max, Dropout's training_mode).
double scalar_of(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.numel() != 1) ctx.fail(std::string(what) + " must be a scalar");
  std::vector<uint8_t> storage;
  return load_as_double(cuda::host_view(t, storage), 0);
}

cuda::BinaryOp binary_op_of(std::string_view t) {
  if (t == "Sub") return cuda::BinaryOp::kSub;
  if (t == "Mul") return cuda::BinaryOp::kMul;
  if (t == "Div") return cuda::BinaryOp::kDiv;
  if (t == "Pow") return cuda::BinaryOp::kPow;
  if (t == "Max") return cuda::BinaryOp::kMax;
  if (t == "Min") return cuda::BinaryOp::kMin;
  return cuda::BinaryOp::kAdd;  // Add, Sum, Mean
}

}  // namespace

void c_unary(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.dtype != DType::kFloat32) return host_fallback(ctx, k_unary);
  UnaryOp op;
  if (!unary_op_from_name(ctx.op_type, &op)) ctx.fail("not a unary function");
  ctx.expect_out(0, x.dtype, x.shape);
  cuda::launch_unary(op, unary_params(op, ctx), x.as<float>(), ctx.out(0).as<float>(), x.numel(),
                     stream());
}

void c_clip(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.dtype != DType::kFloat32) return host_fallback(ctx, k_clip);
  ctx.expect_out(0, x.dtype, x.shape);
  double lo = ctx.attr_float("min", -std::numeric_limits<double>::infinity());
  double hi = ctx.attr_float("max", std::numeric_limits<double>::infinity());
  if (ctx.has_in(1)) lo = scalar_of(ctx, ctx.in(1), "min");
  if (ctx.has_in(2)) hi = scalar_of(ctx, ctx.in(2), "max");
  cuda::launch_clip(x.as<float>(), ctx.out(0).as<float>(), x.numel(), static_cast<float>(lo),
                    static_cast<float>(hi), stream());
}

void c_not(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kBool, "input 0");
  ctx.expect_out(0, DType::kBool, x.shape);
  cuda::launch_not(x.as<bool>(), ctx.out(0).as<bool>(), x.numel(), stream());
}

void c_copy(const KernelContext& ctx) {
  // Identity, Reshape, Flatten, Squeeze, Unsqueeze: the data is unchanged. The target shape
  // was fixed by the plan (and the cpu backend checks the operator's shape rule in CI); here
  // the element type and count must agree.
  const Tensor& x = ctx.in(0);
  const Tensor& y = ctx.out(0);
  if (y.dtype != x.dtype || y.numel() != x.numel())
    ctx.fail("output " + std::string(dtype_name(y.dtype)) + shape_to_string(y.shape) +
             " does not hold the input " + std::string(dtype_name(x.dtype)) +
             shape_to_string(x.shape));
  if (ctx.op_type == "Identity") ctx.expect_out(0, x.dtype, x.shape);
  device_copy(y.data, x.data, x.bytes());
}

void c_dropout(const KernelContext& ctx) {
  if (ctx.has_in(2) && scalar_of(ctx, ctx.in(2), "training_mode") != 0)
    ctx.fail("training_mode=true is not supported (inference form only)");
  const Tensor& x = ctx.in(0);
  ctx.expect_out(0, x.dtype, x.shape);
  device_copy(ctx.out(0).data, x.data, x.bytes());
  if (ctx.has_out(1)) {
    ctx.expect_out(1, DType::kBool, x.shape);
    cuda::launch_fill_bool(ctx.out(1).as<bool>(), x.numel(), true, stream());
  }
}

void c_binary(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  const bool pow_int = ctx.op_type == "Pow" && a.dtype == DType::kFloat32 &&
                       (b.dtype == DType::kInt64 || b.dtype == DType::kInt32);
  if (a.dtype != DType::kFloat32 || (b.dtype != DType::kFloat32 && !pow_int))
    return host_fallback(ctx, k_binary);
  Shape shape = ctx.broadcast({a.shape, b.shape});
  ctx.expect_out(0, a.dtype, shape);
  Strided s;
  if (!make_strided(shape, {a.shape, b.shape}, &s)) return host_fallback(ctx, k_binary);
  if (pow_int)
    cuda::launch_pow_int(s, a.as<float>(), b.data, b.dtype == DType::kInt64, ctx.out(0).as<float>(),
                         stream());
  else
    cuda::launch_binary(binary_op_of(ctx.op_type), s, a.as<float>(), b.as<float>(),
                        ctx.out(0).as<float>(), stream());
}

void c_variadic(const KernelContext& ctx) {
  if (ctx.inputs.empty()) ctx.fail("needs at least one input");
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.in(i).dtype != DType::kFloat32) return host_fallback(ctx, k_variadic);
    shapes.push_back(ctx.in(i).shape);
  }
  Shape shape = ctx.broadcast(shapes);
  ctx.expect_out(0, DType::kFloat32, shape);
  const Tensor& y = ctx.out(0);
  Strided s;
  if (!make_strided(shape, {ctx.in(0).shape}, &s)) return host_fallback(ctx, k_variadic);
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (ctx.in(i).data == y.data && i > 0) return host_fallback(ctx, k_variadic);
  // Fold left to right in input order, as the cpu kernel: y = x0, then y = y op x_i.
  const std::vector<int64_t> yst = strides_of(shape);
  for (size_t d = 0; d < shape.size(); ++d) s.strides[1][d] = yst[d];
  cuda::launch_strided_copy(s, ctx.in(0).data, 0, y.data, 0, 4, stream());
  const cuda::BinaryOp op = binary_op_of(ctx.op_type);
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    Strided si;
    make_strided(shape, {shape, ctx.in(i).shape}, &si);
    cuda::launch_binary(op, si, y.as<float>(), ctx.in(i).as<float>(), y.as<float>(), stream());
  }
  if (ctx.op_type == "Mean")
    cuda::launch_scale(y.as<float>(), y.numel(), static_cast<float>(ctx.inputs.size()), stream());
}

void c_compare(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (a.dtype != b.dtype || (a.dtype != DType::kFloat32 && a.dtype != DType::kBool))
    return host_fallback(ctx, k_compare);
  const std::string_view t = ctx.op_type;
  const bool logical = t == "And" || t == "Or" || t == "Xor";
  if (logical) ctx.expect_dtype(a, DType::kBool, "input 0");
  Shape shape = ctx.broadcast({a.shape, b.shape});
  ctx.expect_out(0, DType::kBool, shape);
  Strided s;
  if (!make_strided(shape, {a.shape, b.shape}, &s)) return host_fallback(ctx, k_compare);
  const cuda::CompareOp op = t == "Equal"            ? cuda::CompareOp::kEqual
                             : t == "Less"           ? cuda::CompareOp::kLess
                             : t == "Greater"        ? cuda::CompareOp::kGreater
                             : t == "LessOrEqual"    ? cuda::CompareOp::kLessOrEqual
                             : t == "GreaterOrEqual" ? cuda::CompareOp::kGreaterOrEqual
                             : t == "And"            ? cuda::CompareOp::kAnd
                             : t == "Or"             ? cuda::CompareOp::kOr
                                                     : cuda::CompareOp::kXor;
  cuda::launch_compare(op, s, a.data, b.data, a.dtype == DType::kFloat32, ctx.out(0).as<bool>(),
                       stream());
}

void c_where(const KernelContext& ctx) {
  const Tensor& c = ctx.in(0);
  const Tensor& a = ctx.in(1);
  const Tensor& b = ctx.in(2);
  ctx.expect_dtype(c, DType::kBool, "condition");
  if (a.dtype != b.dtype) ctx.fail("X and Y have different types");
  Shape shape = ctx.broadcast({c.shape, a.shape, b.shape});
  ctx.expect_out(0, a.dtype, shape);
  Strided s;
  if (!make_strided(shape, {c.shape, a.shape, b.shape}, &s)) return host_fallback(ctx, k_where);
  cuda::launch_where(s, c.as<bool>(), a.data, b.data, ctx.out(0).data,
                     static_cast<int>(dtype_size(a.dtype)), stream());
}

void c_transpose(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) {
    perm.resize(x.shape.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
  }
  if (perm.size() != x.shape.size())
    ctx.fail("perm has " + std::to_string(perm.size()) + " entries for rank " +
             std::to_string(x.rank()));
  if (x.shape.size() > static_cast<size_t>(cuda::kMaxDims)) return host_fallback(ctx, k_transpose);
  std::vector<bool> seen(perm.size(), false);
  Shape out;
  const std::vector<int64_t> in_st = strides_of(x.shape);
  Strided s;
  s.rank = static_cast<int>(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    const int64_t p = perm[d];
    if (p < 0 || p >= x.rank() || seen[static_cast<size_t>(p)])
      ctx.fail("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    out.push_back(x.shape[static_cast<size_t>(p)]);
    s.shape[d] = x.shape[static_cast<size_t>(p)];
    s.strides[0][d] = in_st[static_cast<size_t>(p)];
  }
  ctx.expect_out(0, x.dtype, out);
  const std::vector<int64_t> yst = strides_of(out);
  for (size_t d = 0; d < out.size(); ++d) s.strides[1][d] = yst[d];
  cuda::launch_strided_copy(s, x.data, 0, ctx.out(0).data, 0, static_cast<int>(dtype_size(x.dtype)),
                            stream());
}

void c_shape(const KernelContext& ctx) {
  host_fallback(ctx, k_shape, /*copy_inputs=*/false);  // reads only the input's shape
}

void c_loss_grad(const KernelContext& ctx) {
  ctx.expect_arity(1, 1, "(Y) -> dY");
  const Tensor& y = ctx.in(0);
  if (y.dtype != DType::kFloat32 && y.dtype != DType::kFloat16 && y.dtype != DType::kBFloat16)
    ctx.fail("Y has type " + std::string(dtype_name(y.dtype)) + ", expected f32, f16 or bf16");
  ctx.expect_out(0, y.dtype, y.shape);
  const auto scale = static_cast<float>(ctx.attr_float("scale", 1.0));
  device_copy(ctx.out(0).data, y.data, y.bytes());
  if (y.dtype == DType::kFloat32)
    cuda::launch_scale(ctx.out(0).as<float>(), y.numel(), scale, stream());
  else
    cuda::launch_scale_half(static_cast<int>(y.dtype), ctx.out(0).data, y.numel(), scale, stream());
}

void c_unary_grad(const KernelContext& ctx) {
  const std::string op_name = ctx.attr_string("op", "");
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const Tensor& y = ctx.in(2);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(x, DType::kFloat32, "X");
  ctx.expect_dtype(y, DType::kFloat32, "Y");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  if (ctx.broadcast({dy.shape, x.shape, y.shape}) != dy.shape)
    ctx.fail("X " + shape_to_string(x.shape) + " and Y " + shape_to_string(y.shape) +
             " do not broadcast to dY " + shape_to_string(dy.shape));
  float* dx = ctx.out(0).as<float>();
  if (op_name == "Pow") {
    const Tensor& e = ctx.in(3);
    if (ctx.broadcast({dy.shape, e.shape}) != dy.shape)
      ctx.fail("exponent does not broadcast to dY");
    const int e_type = e.dtype == DType::kFloat32 ? 0
                       : e.dtype == DType::kInt32 ? 1
                       : e.dtype == DType::kInt64 ? 2
                                                  : -1;
    Strided s;
    if (e_type < 0 || !make_strided(dy.shape, {x.shape, e.shape}, &s))
      return host_fallback(ctx, k_unary_grad);
    return cuda::launch_pow_grad(s, dy.as<float>(), x.as<float>(), e.data, e_type, dx, stream());
  }
  Strided s;
  if (!make_strided(dy.shape, {x.shape, y.shape}, &s)) return host_fallback(ctx, k_unary_grad);
  if (op_name == "Clip")
    return cuda::launch_clip_grad(s, dy.as<float>(), x.as<float>(), y.as<float>(), dx,
                                  clip_bounds(ctx), stream());
  UnaryOp op;
  if (!unary_op_from_name(op_name, &op)) ctx.fail("no gradient for op=\"" + op_name + "\"");
  cuda::launch_unary_grad(op, unary_params(op, ctx), s, dy.as<float>(), x.as<float>(),
                          y.as<float>(), dx, stream());
}

void c_div_grad_b(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& y = ctx.in(1);
  const Tensor& b = ctx.in(2);
  for (const Tensor* t : {&dy, &y, &b}) ctx.expect_dtype(*t, DType::kFloat32, "input");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  if (ctx.broadcast({dy.shape, y.shape, b.shape}) != dy.shape)
    ctx.fail("inputs do not broadcast to dY");
  Strided s;
  if (!make_strided(dy.shape, {y.shape, b.shape}, &s)) return host_fallback(ctx, k_div_grad_b);
  cuda::launch_div_grad_b(s, dy.as<float>(), y.as<float>(), b.as<float>(), ctx.out(0).as<float>(),
                          stream());
}

void c_where_grad(const KernelContext& ctx) {
  const Tensor& c = ctx.in(0);
  const Tensor& dy = ctx.in(1);
  ctx.expect_dtype(c, DType::kBool, "condition");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  const int64_t branch = ctx.attr_int("branch", 0);
  if (branch != 1 && branch != 2) ctx.fail("attribute branch must be 1 or 2");
  if (ctx.broadcast({c.shape, dy.shape}) != dy.shape)
    ctx.fail("condition does not broadcast to dY");
  Strided s;
  if (!make_strided(dy.shape, {c.shape}, &s)) return host_fallback(ctx, k_where_grad);
  cuda::launch_where_grad(s, c.as<bool>(), dy.as<float>(), branch == 1, ctx.out(0).as<float>(),
                          stream());
}

void c_zeros_like(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_out(0, x.dtype, x.shape);
  if (x.bytes()) PLANNER_CUDA_CHECK(cudaMemsetAsync(ctx.out(0).data, 0, x.bytes(), stream()));
}

namespace {

// The optimizers' checks (optim.cpp's check_same): inputs [0, n) and outputs are f32 with the
// parameter's shape.
void check_same(const KernelContext& ctx, size_t n_in, size_t n_out) {
  const Tensor& p = ctx.in(0);
  ctx.expect_dtype(p, DType::kFloat32, "parameter");
  for (size_t i = 1; i < n_in; ++i) {
    ctx.expect_dtype(ctx.in(i), DType::kFloat32, "input " + std::to_string(i));
    if (ctx.in(i).shape != p.shape)
      ctx.fail("input " + std::to_string(i) + " has shape " + shape_to_string(ctx.in(i).shape) +
               ", expected the parameter's " + shape_to_string(p.shape));
  }
  for (size_t k = 0; k < n_out; ++k) ctx.expect_out(k, DType::kFloat32, p.shape);
}

}  // namespace

void c_sgd(const KernelContext& ctx) {
  check_same(ctx, 2, 1);
  cuda::launch_sgd(ctx.in(0).as<float>(), ctx.in(1).as<float>(), ctx.out(0).as<float>(),
                   ctx.in(0).numel(), static_cast<float>(ctx.attr_float("lr", 0.01)),
                   static_cast<float>(ctx.attr_float("grad_scale", 1.0)), stream());
}

void c_momentum(const KernelContext& ctx) {
  check_same(ctx, 3, 2);
  cuda::launch_momentum(ctx.in(0).as<float>(), ctx.in(1).as<float>(), ctx.in(2).as<float>(),
                        ctx.out(0).as<float>(), ctx.out(1).as<float>(), ctx.in(0).numel(),
                        static_cast<float>(ctx.attr_float("lr", 0.01)),
                        static_cast<float>(ctx.attr_float("momentum", 0.9)),
                        static_cast<float>(ctx.attr_float("grad_scale", 1.0)), stream());
}

void c_adam(const KernelContext& ctx) {
  check_same(ctx, 4, 3);
  const double lr = ctx.attr_float("lr", 0.001), b1 = ctx.attr_float("beta1", 0.9),
               b2 = ctx.attr_float("beta2", 0.999), eps = ctx.attr_float("epsilon", 1e-8);
  double t = static_cast<double>(ctx.attr_int("step", 1));
  if (ctx.has_in(4)) t = scalar_of(ctx, ctx.in(4), "step");
  if (t < 1) ctx.fail("step must be at least 1");
  const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
  cuda::launch_adam(ctx.in(0).as<float>(), ctx.in(1).as<float>(), ctx.in(2).as<float>(),
                    ctx.in(3).as<float>(), ctx.out(0).as<float>(), ctx.out(1).as<float>(),
                    ctx.out(2).as<float>(), ctx.in(0).numel(), lr, b1, b2, eps, c1, c2,
                    ctx.attr_float("grad_scale", 1.0), stream());
}

void c_dropout_train(const KernelContext& ctx) {
  ctx.expect_arity(1, 2, "(X) -> (Y, mask)");
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  ctx.expect_out(0, DType::kFloat32, x.shape);
  bool* mask = nullptr;
  if (ctx.has_out(1)) {
    ctx.expect_out(1, DType::kBool, x.shape);
    mask = ctx.out(1).as<bool>();
  }
  cuda::launch_dropout_train(dropout_layout(ctx, x.shape),
                             static_cast<uint64_t>(ctx.attr_int("seed", 0)), dropout_ratio(ctx),
                             x.as<float>(), ctx.out(0).as<float>(), mask, x.numel(), stream());
}

void c_dropout_grad(const KernelContext& ctx) {
  ctx.expect_arity(2, 1, "(dY, mask) -> dX");
  const Tensor& dy = ctx.in(0);
  const Tensor& mask = ctx.in(1);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(mask, DType::kBool, "mask");
  if (mask.shape != dy.shape)
    ctx.fail("mask " + shape_to_string(mask.shape) + " and dY " + shape_to_string(dy.shape) +
             " differ");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  cuda::launch_dropout_grad(dy.as<float>(), mask.as<bool>(), ctx.out(0).as<float>(), dy.numel(),
                            dropout_ratio(ctx), stream());
}

}  // namespace planner::rt::kernels
