// Element-wise kernels: unary functions, numpy-broadcast binary and variadic ops, comparisons,
// Where, Clip, Cast, Identity, Dropout (inference), UnaryGrad which shares the functions, and
// LossGrad (the gradient of the training step's loss 0.5*sum(y^2)).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_util.h"
#include "planner_rt/half.h"

namespace planner::rt::kernels {

namespace {

struct UnaryName {
  std::string_view name;
  UnaryOp op;
};
constexpr UnaryName kUnaryNames[] = {
    {"Relu", UnaryOp::kRelu},
    {"Sigmoid", UnaryOp::kSigmoid},
    {"Tanh", UnaryOp::kTanh},
    {"Erf", UnaryOp::kErf},
    {"Sqrt", UnaryOp::kSqrt},
    {"Exp", UnaryOp::kExp},
    {"Log", UnaryOp::kLog},
    {"Abs", UnaryOp::kAbs},
    {"Gelu", UnaryOp::kGelu},
    {"Softplus", UnaryOp::kSoftplus},
    {"LeakyRelu", UnaryOp::kLeakyRelu},
    {"Elu", UnaryOp::kElu},
    {"Selu", UnaryOp::kSelu},
    {"Reciprocal", UnaryOp::kReciprocal},
    {"Softsign", UnaryOp::kSoftsign},
    {"HardSigmoid", UnaryOp::kHardSigmoid},
    {"Sin", UnaryOp::kSin},
    {"Cos", UnaryOp::kCos},
    {"Mish", UnaryOp::kMish},
    {"HardSwish", UnaryOp::kHardSwish},
    {"Neg", UnaryOp::kNeg},
    {"Ceil", UnaryOp::kCeil},
    {"Floor", UnaryOp::kFloor},
    {"Tan", UnaryOp::kTan},
    {"Asin", UnaryOp::kAsin},
    {"Acos", UnaryOp::kAcos},
    {"Atan", UnaryOp::kAtan},
    {"Sinh", UnaryOp::kSinh},
    {"Cosh", UnaryOp::kCosh},
    {"Asinh", UnaryOp::kAsinh},
    {"Acosh", UnaryOp::kAcosh},
    {"Atanh", UnaryOp::kAtanh},
    {"Celu", UnaryOp::kCelu},
    {"ThresholdedRelu", UnaryOp::kThresholdedRelu},
    {"Shrink", UnaryOp::kShrink},
    {"Round", UnaryOp::kRound},
    {"Sign", UnaryOp::kSign},
};

}  // namespace

bool unary_op_from_name(std::string_view op, UnaryOp* result) {
  for (const UnaryName& u : kUnaryNames)
    if (u.name == op) {
      *result = u.op;
      return true;
    }
  return false;
}

UnaryParams unary_params(UnaryOp op, const KernelContext& ctx) {
  UnaryParams p;
  switch (op) {
    case UnaryOp::kLeakyRelu:
      p.alpha = ctx.attr_float("alpha", 0.01);
      break;
    case UnaryOp::kElu:
      p.alpha = ctx.attr_float("alpha", 1.0);
      break;
    case UnaryOp::kSelu:
      p.alpha = ctx.attr_float("alpha", 1.67326319217681884765625);
      p.gamma = ctx.attr_float("gamma", 1.05070102214813232421875);
      break;
    case UnaryOp::kHardSigmoid:
      p.alpha = ctx.attr_float("alpha", 0.2);
      p.beta = ctx.attr_float("beta", 0.5);
      break;
    case UnaryOp::kCelu:
      p.alpha = ctx.attr_float("alpha", 1.0);
      if (p.alpha == 0) ctx.fail("alpha must be non-zero");
      break;
    case UnaryOp::kThresholdedRelu:
      p.alpha = ctx.attr_float("alpha", 1.0);
      break;
    case UnaryOp::kShrink:
      p.beta = ctx.attr_float("bias", 0.0);
      p.gamma = ctx.attr_float("lambd", 0.5);
      break;
    case UnaryOp::kGelu: {
      std::string a = ctx.attr_string("approximate", "none");
      if (a != "none" && a != "tanh") ctx.fail("unsupported approximate=\"" + a + "\"");
      p.tanh_gelu = a == "tanh";
      break;
    }
    default:
      break;
  }
  return p;
}

double unary_value(UnaryOp op, const UnaryParams& p, double x) {
  return unary_math::value(op, p, x);
}

double unary_derivative(UnaryOp op, const UnaryParams& p, double x, double y) {
  return unary_math::derivative(op, p, x, y);
}

void k_unary(const KernelContext& ctx) {
  UnaryOp op;
  if (!unary_op_from_name(ctx.op_type, &op)) ctx.fail("not a unary function");
  const Tensor& x = ctx.in(0);
  ctx.expect_out(0, x.dtype, x.shape);
  const Tensor& y = ctx.out(0);
  const int64_t n = x.numel();
  if (x.dtype == DType::kFloat32) {
    UnaryParams p = unary_params(op, ctx);
    const float* xs = x.as<float>();
    float* ys = y.as<float>();
    for (int64_t i = 0; i < n; ++i) ys[i] = static_cast<float>(unary_value(op, p, xs[i]));
    return;
  }
  if ((op == UnaryOp::kAbs || op == UnaryOp::kNeg || op == UnaryOp::kRelu) &&
      (x.dtype == DType::kInt64 || x.dtype == DType::kInt32)) {
    auto run = [&](auto* xs, auto* ys) {
      for (int64_t i = 0; i < n; ++i) {
        auto v = xs[i];
        ys[i] =
            op == UnaryOp::kNeg ? -v : (op == UnaryOp::kAbs ? (v < 0 ? -v : v) : (v > 0 ? v : 0));
      }
    };
    if (x.dtype == DType::kInt64)
      run(x.as<int64_t>(), y.as<int64_t>());
    else
      run(x.as<int32_t>(), y.as<int32_t>());
    return;
  }
  ctx.fail("unsupported input type " + std::string(dtype_name(x.dtype)));
}

namespace {

enum class BinOp { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

template <typename T>
T apply(const KernelContext& ctx, BinOp op, T a, T b) {
  switch (op) {
    case BinOp::kAdd:
      return a + b;
    case BinOp::kSub:
      return a - b;
    case BinOp::kMul:
      return a * b;
    case BinOp::kDiv:
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) ctx.fail("integer division by zero");
        if (b == -1) return static_cast<T>(-a);  // avoids INT_MIN / -1
      }
      return a / b;
    case BinOp::kPow:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
      else
        return std::pow(a, b);
    case BinOp::kMax:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      return a > b ? a : b;
    case BinOp::kMin:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      return a < b ? a : b;
  }
  return a;
}

BinOp bin_op(const KernelContext& ctx) {
  std::string_view t = ctx.op_type;
  if (t == "Add" || t == "Sum" || t == "Mean") return BinOp::kAdd;
  if (t == "Sub") return BinOp::kSub;
  if (t == "Mul") return BinOp::kMul;
  if (t == "Div") return BinOp::kDiv;
  if (t == "Pow") return BinOp::kPow;
  if (t == "Max") return BinOp::kMax;
  if (t == "Min") return BinOp::kMin;
  ctx.fail("not a binary operator");
}

template <typename T>
void binary_typed(const KernelContext& ctx, BinOp op, const Tensor& a, const Tensor& b,
                  const Tensor& y) {
  const T* as = static_cast<const T*>(a.data);
  const T* bs = static_cast<const T*>(b.data);
  T* ys = static_cast<T*>(y.data);
  if (a.shape == b.shape) {  // the common case, without index arithmetic
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) ys[i] = apply<T>(ctx, op, as[i], bs[i]);
    return;
  }
  broadcast_loop<2>(y.shape, {a.shape, b.shape}, [&](int64_t o, const std::array<int64_t, 2>& off) {
    ys[o] = apply<T>(ctx, op, as[off[0]], bs[off[1]]);
  });
}

void binary(const KernelContext& ctx, BinOp op, const Tensor& a, const Tensor& b, const Tensor& y) {
  switch (a.dtype) {
    case DType::kFloat32:
      return binary_typed<float>(ctx, op, a, b, y);
    case DType::kInt64:
      return binary_typed<int64_t>(ctx, op, a, b, y);
    case DType::kInt32:
      return binary_typed<int32_t>(ctx, op, a, b, y);
    default:
      ctx.fail("unsupported input type " + std::string(dtype_name(a.dtype)));
  }
}

}  // namespace

void k_binary(const KernelContext& ctx) {
  BinOp op = bin_op(ctx);
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  Shape shape = ctx.broadcast({a.shape, b.shape});
  ctx.expect_out(0, a.dtype, shape);
  const Tensor& y = ctx.out(0);
  if (a.dtype != b.dtype) {
    // Only Pow mixes types (a float base with an integer exponent).
    if (op != BinOp::kPow || a.dtype != DType::kFloat32)
      ctx.fail("inputs have types " + std::string(dtype_name(a.dtype)) + " and " +
               std::string(dtype_name(b.dtype)));
    float* ys = y.as<float>();
    const float* as = a.as<float>();
    broadcast_loop<2>(shape, {a.shape, b.shape}, [&](int64_t o, const std::array<int64_t, 2>& off) {
      ys[o] =
          static_cast<float>(std::pow(static_cast<double>(as[off[0]]), load_as_double(b, off[1])));
    });
    return;
  }
  binary(ctx, op, a, b, y);
}

void k_variadic(const KernelContext& ctx) {
  BinOp op = bin_op(ctx);
  if (ctx.inputs.empty()) ctx.fail("needs at least one input");
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& t = ctx.in(i);
    if (t.dtype != ctx.in(0).dtype) ctx.fail("inputs have different types");
    shapes.push_back(t.shape);
  }
  Shape shape = ctx.broadcast(shapes);
  DType d = ctx.in(0).dtype;
  ctx.expect_out(0, d, shape);
  const Tensor& y = ctx.out(0);
  // Fold left to right in input order: y = ((x0 op x1) op x2) ..., a fixed order.
  Tensor first = ctx.in(0);
  Tensor ybroad = y;
  if (first.shape != shape) {
    // Broadcast x0 into y via y = x0 + 0 style copy.
    const size_t es = dtype_size(d);
    const auto* src = static_cast<const uint8_t*>(first.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    broadcast_loop<1>(shape, {first.shape}, [&](int64_t o, const std::array<int64_t, 1>& off) {
      std::memcpy(dst + o * es, src + off[0] * es, es);
    });
  } else {
    std::memcpy(y.data, first.data, y.bytes());
  }
  for (size_t i = 1; i < ctx.inputs.size(); ++i) binary(ctx, op, ybroad, ctx.in(i), y);
  if (ctx.op_type == "Mean") {
    if (d != DType::kFloat32) ctx.fail("Mean needs f32 inputs");
    float* ys = y.as<float>();
    const float n = static_cast<float>(ctx.inputs.size());
    for (int64_t i = 0; i < y.numel(); ++i) ys[i] /= n;
  }
}

namespace {

template <typename T>
void compare_typed(const KernelContext& ctx, const Tensor& a, const Tensor& b, const Tensor& y) {
  const T* as = static_cast<const T*>(a.data);
  const T* bs = static_cast<const T*>(b.data);
  bool* ys = y.as<bool>();
  std::string_view t = ctx.op_type;
  int kind = t == "Equal"            ? 0
             : t == "Less"           ? 1
             : t == "Greater"        ? 2
             : t == "LessOrEqual"    ? 3
             : t == "GreaterOrEqual" ? 4
             : t == "And"            ? 5
             : t == "Or"             ? 6
                                     : 7;
  broadcast_loop<2>(y.shape, {a.shape, b.shape}, [&](int64_t o, const std::array<int64_t, 2>& off) {
    T u = as[off[0]], v = bs[off[1]];
    bool r = false;
    switch (kind) {
      case 0:
        r = u == v;
        break;
      case 1:
        r = u < v;
        break;
      case 2:
        r = u > v;
        break;
      case 3:
        r = u <= v;
        break;
      case 4:
        r = u >= v;
        break;
      case 5:
        r = u && v;
        break;
      case 6:
        r = u || v;
        break;
      default:
        r = static_cast<bool>(u) != static_cast<bool>(v);
        break;
    }
    ys[o] = r;
  });
}

}  // namespace

void k_compare(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (a.dtype != b.dtype) ctx.fail("inputs have different types");
  bool logical = ctx.op_type == "And" || ctx.op_type == "Or" || ctx.op_type == "Xor";
  if (logical) ctx.expect_dtype(a, DType::kBool, "input 0");
  ctx.expect_out(0, DType::kBool, ctx.broadcast({a.shape, b.shape}));
  const Tensor& y = ctx.out(0);
  switch (a.dtype) {
    case DType::kFloat32:
      return compare_typed<float>(ctx, a, b, y);
    case DType::kInt64:
      return compare_typed<int64_t>(ctx, a, b, y);
    case DType::kInt32:
      return compare_typed<int32_t>(ctx, a, b, y);
    case DType::kUInt8:
      return compare_typed<uint8_t>(ctx, a, b, y);
    case DType::kBool:
      return compare_typed<bool>(ctx, a, b, y);
    default:
      ctx.fail("unsupported input type " + std::string(dtype_name(a.dtype)));
  }
}

void k_not(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kBool, "input 0");
  ctx.expect_out(0, DType::kBool, x.shape);
  const bool* xs = x.as<bool>();
  bool* ys = ctx.out(0).as<bool>();
  for (int64_t i = 0; i < x.numel(); ++i) ys[i] = !xs[i];
}

void k_where(const KernelContext& ctx) {
  const Tensor& c = ctx.in(0);
  const Tensor& a = ctx.in(1);
  const Tensor& b = ctx.in(2);
  ctx.expect_dtype(c, DType::kBool, "condition");
  if (a.dtype != b.dtype) ctx.fail("X and Y have different types");
  Shape shape = ctx.broadcast({c.shape, a.shape, b.shape});
  ctx.expect_out(0, a.dtype, shape);
  const size_t es = dtype_size(a.dtype);
  const bool* cs = c.as<bool>();
  const auto* as = static_cast<const uint8_t*>(a.data);
  const auto* bs = static_cast<const uint8_t*>(b.data);
  auto* ys = static_cast<uint8_t*>(ctx.out(0).data);
  broadcast_loop<3>(shape, {c.shape, a.shape, b.shape},
                    [&](int64_t o, const std::array<int64_t, 3>& off) {
                      const uint8_t* src = cs[off[0]] ? as + off[1] * es : bs + off[2] * es;
                      std::memcpy(ys + o * es, src, es);
                    });
}

void k_clip(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_out(0, x.dtype, x.shape);
  // Opset 11+: min/max are optional scalar inputs; opset 6: attributes.
  double lo = -std::numeric_limits<double>::infinity(),
         hi = std::numeric_limits<double>::infinity();
  lo = ctx.attr_float("min", lo);
  hi = ctx.attr_float("max", hi);
  if (ctx.has_in(1)) {
    if (ctx.in(1).numel() != 1) ctx.fail("min must be a scalar");
    lo = load_as_double(ctx.in(1), 0);
  }
  if (ctx.has_in(2)) {
    if (ctx.in(2).numel() != 1) ctx.fail("max must be a scalar");
    hi = load_as_double(ctx.in(2), 0);
  }
  const Tensor& y = ctx.out(0);
  if (x.dtype == DType::kFloat32) {
    const float* xs = x.as<float>();
    float* ys = y.as<float>();
    const float l = static_cast<float>(lo), h = static_cast<float>(hi);
    for (int64_t i = 0; i < x.numel(); ++i) ys[i] = std::min(std::max(xs[i], l), h);
    return;
  }
  if (x.dtype != DType::kInt64 && x.dtype != DType::kInt32) ctx.fail("unsupported input type");
  for (int64_t i = 0; i < x.numel(); ++i)
    store_from_double(y, i, std::min(std::max(load_as_double(x, i), lo), hi));
}

namespace {

// f16 <-> f32 conversions: planner_rt/half.h (shared with the cuda backend).

// float -> integer without undefined behaviour: NaN gives 0, out-of-range values saturate.
template <typename I>
I float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace

void cast_like(const KernelContext& ctx, KernelFn cast) {
  if (!ctx.has_in(1)) ctx.fail("needs target_type (input 1), whose type the output takes");
  Attributes attrs = ctx.attrs;
  attrs["to"] = static_cast<int64_t>(ctx.in(1).dtype);
  const Tensor input = ctx.in(0);
  cast(
      KernelContext{ctx.op_type, ctx.node, attrs, std::span<const Tensor>(&input, 1), ctx.outputs});
}

void k_cast_like(const KernelContext& ctx) {
  cast_like(ctx, k_cast);
}

void k_cast(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& y = ctx.out(0);
  int64_t to = ctx.attr_int("to", -1);
  if (to != static_cast<int64_t>(y.dtype))
    ctx.fail("attribute to=" + std::to_string(to) + " does not match the output type " +
             std::string(dtype_name(y.dtype)));
  ctx.expect_out_shape(0, x.shape);
  const int64_t n = x.numel();
  if (x.dtype == y.dtype) {
    std::memcpy(y.data, x.data, x.bytes());
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    // Integers go through int64 to keep every i64 value exact; floats through double.
    bool from_int = x.dtype == DType::kInt64 || x.dtype == DType::kInt32 ||
                    x.dtype == DType::kUInt8 || x.dtype == DType::kBool;
    double dv = 0;
    int64_t iv = 0;
    if (x.dtype == DType::kFloat16)
      dv = f16_to_f32(static_cast<const uint16_t*>(x.data)[i]);
    else if (x.dtype == DType::kInt64)
      iv = static_cast<const int64_t*>(x.data)[i];
    else if (from_int)
      iv = static_cast<int64_t>(load_as_double(x, i));
    else
      dv = load_as_double(x, i);
    if (from_int) dv = static_cast<double>(iv);
    switch (y.dtype) {
      case DType::kFloat32:
        static_cast<float*>(y.data)[i] = static_cast<float>(dv);
        break;
      case DType::kFloat16:
        static_cast<uint16_t*>(y.data)[i] = f32_to_f16(static_cast<float>(dv));
        break;
      case DType::kBool:
        static_cast<bool*>(y.data)[i] = from_int ? iv != 0 : dv != 0;
        break;
      case DType::kInt64:
        static_cast<int64_t*>(y.data)[i] = from_int ? iv : float_to_int<int64_t>(dv);
        break;
      case DType::kInt32:
        static_cast<int32_t*>(y.data)[i] =
            from_int ? static_cast<int32_t>(iv) : float_to_int<int32_t>(dv);
        break;
      case DType::kUInt8:
        static_cast<uint8_t*>(y.data)[i] =
            from_int ? static_cast<uint8_t>(iv) : float_to_int<uint8_t>(dv);
        break;
      default:
        ctx.fail("unsupported output type");
    }
  }
}

void k_identity(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_out(0, x.dtype, x.shape);
  std::memmove(ctx.out(0).data, x.data, x.bytes());
}

void k_dropout(const KernelContext& ctx) {
  // Inference form: training_mode (input 2) must be absent or false; the mask is all ones.
  if (ctx.has_in(2)) {
    const Tensor& tm = ctx.in(2);
    if (tm.numel() != 1) ctx.fail("training_mode must be a scalar");
    if (load_as_double(tm, 0) != 0)
      ctx.fail("training_mode=true is not supported (inference form only)");
  }
  const Tensor& x = ctx.in(0);
  ctx.expect_out(0, x.dtype, x.shape);
  std::memmove(ctx.out(0).data, x.data, x.bytes());
  if (ctx.has_out(1)) {
    ctx.expect_out(1, DType::kBool, x.shape);
    bool* m = ctx.out(1).as<bool>();
    std::fill(m, m + x.numel(), true);
  }
}

// ---- UnaryGrad: dX = dY * f'(X) ---------------------------------------------------------------

ClipBounds clip_bounds(const KernelContext& ctx) {
  ClipBounds b;
  b.bounded = ctx.has_attr("min") || ctx.has_attr("max");
  b.lo = static_cast<float>(ctx.attr_float("min", -std::numeric_limits<float>::max()));
  b.hi = static_cast<float>(ctx.attr_float("max", std::numeric_limits<float>::max()));
  return b;
}

void k_unary_grad(const KernelContext& ctx) {
  std::string op_name = ctx.attr_string("op", "");
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
  const float* dys = dy.as<float>();
  const float* xs = x.as<float>();
  const float* ys = y.as<float>();
  float* dx = ctx.out(0).as<float>();
  if (op_name == "Pow") {
    // d(x^e)/dx = e * x^(e-1); the exponent (input 3) broadcasts like X.
    const Tensor& e = ctx.in(3);
    if (ctx.broadcast({dy.shape, e.shape}) != dy.shape)
      ctx.fail("exponent does not broadcast to dY");
    broadcast_loop<3>(dy.shape, {x.shape, e.shape, dy.shape},
                      [&](int64_t o, const std::array<int64_t, 3>& off) {
                        double ev = load_as_double(e, off[1]);
                        double xv = xs[off[0]];
                        double d = ev == 0 ? 0.0 : ev * std::pow(xv, ev - 1);
                        dx[o] = static_cast<float>(dys[o] * d);
                      });
    return;
  }
  if (op_name == "Clip") {
    const ClipBounds b = clip_bounds(ctx);
    broadcast_loop<2>(
        dy.shape, {x.shape, y.shape}, [&](int64_t o, const std::array<int64_t, 2>& off) {
          dx[o] = clip_grad_element(dys[o], xs[off[0]], ys[off[1]], b.bounded, b.lo, b.hi);
        });
    return;
  }
  UnaryOp op;
  if (!unary_op_from_name(op_name, &op)) ctx.fail("no gradient for op=\"" + op_name + "\"");
  UnaryParams p = unary_params(op, ctx);
  broadcast_loop<2>(
      dy.shape, {x.shape, y.shape}, [&](int64_t o, const std::array<int64_t, 2>& off) {
        dx[o] = static_cast<float>(dys[o] * unary_derivative(op, p, xs[off[0]], ys[off[1]]));
      });
}

void k_div_grad_b(const KernelContext& ctx) {
  // d(a/b)/db = -a/b^2 = -y/b.
  const Tensor& dy = ctx.in(0);
  const Tensor& y = ctx.in(1);
  const Tensor& b = ctx.in(2);
  for (const Tensor* t : {&dy, &y, &b}) ctx.expect_dtype(*t, DType::kFloat32, "input");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  if (ctx.broadcast({dy.shape, y.shape, b.shape}) != dy.shape)
    ctx.fail("inputs do not broadcast to dY");
  const float* dys = dy.as<float>();
  const float* ys = y.as<float>();
  const float* bs = b.as<float>();
  float* out = ctx.out(0).as<float>();
  broadcast_loop<2>(dy.shape, {y.shape, b.shape},
                    [&](int64_t o, const std::array<int64_t, 2>& off) {
                      out[o] = -dys[o] * ys[off[0]] / bs[off[1]];
                    });
}

void k_where_grad(const KernelContext& ctx) {
  const Tensor& c = ctx.in(0);
  const Tensor& dy = ctx.in(1);
  ctx.expect_dtype(c, DType::kBool, "condition");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_out(0, DType::kFloat32, dy.shape);
  int64_t branch = ctx.attr_int("branch", 0);
  if (branch != 1 && branch != 2) ctx.fail("attribute branch must be 1 or 2");
  if (ctx.broadcast({c.shape, dy.shape}) != dy.shape)
    ctx.fail("condition does not broadcast to dY");
  const bool* cs = c.as<bool>();
  const float* dys = dy.as<float>();
  float* out = ctx.out(0).as<float>();
  broadcast_loop<1>(dy.shape, {c.shape}, [&](int64_t o, const std::array<int64_t, 1>& off) {
    out[o] = (cs[off[0]] == (branch == 1)) ? dys[o] : 0.0f;
  });
}

// ---- LossGrad: the gradient of 0.5 * mean(y^2), which is y * scale -----------------------

void k_loss_grad(const KernelContext& ctx) {
  // Input Y (a model output), output dY = scale * Y (scale = 1 / numel of the whole output):
  // the seed of the backward pass. 16-bit outputs are scaled in f32 and rounded once.
  ctx.expect_arity(1, 1, "(Y) -> dY");
  const Tensor& y = ctx.in(0);
  if (y.dtype != DType::kFloat32 && y.dtype != DType::kFloat16 && y.dtype != DType::kBFloat16)
    ctx.fail("Y has type " + std::string(dtype_name(y.dtype)) + ", expected f32, f16 or bf16");
  ctx.expect_out(0, y.dtype, y.shape);
  const auto scale = static_cast<float>(ctx.attr_float("scale", 1.0));
  const int64_t n = y.numel();
  if (y.dtype == DType::kFloat32) {
    const float* in = y.as<float>();
    float* out = ctx.out(0).as<float>();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] * scale;
    return;
  }
  const bool bf16 = y.dtype == DType::kBFloat16;
  const auto* in = static_cast<const uint16_t*>(y.data);
  auto* out = static_cast<uint16_t*>(ctx.out(0).data);
  for (int64_t i = 0; i < n; ++i) {
    const float v = (bf16 ? bf16_to_f32(in[i]) : f16_to_f32(in[i])) * scale;
    out[i] = bf16 ? f32_to_bf16(v) : f32_to_f16(v);
  }
}

}  // namespace planner::rt::kernels
