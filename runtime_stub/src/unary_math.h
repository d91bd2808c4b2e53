// The unary functions of the element-wise kernels and UnaryGrad (value and derivative), shared
// by the cpu kernels and the cuda ones: plain C math on doubles, callable from device code.
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define PLANNER_RT_HD __host__ __device__
#else
#define PLANNER_RT_HD
#endif

namespace planner::rt::kernels {

/// The unary functions the forward kernels and UnaryGrad share (value and derivative).
enum class UnaryOp {
  kRelu,
  kSigmoid,
  kTanh,
  kErf,
  kSqrt,
  kExp,
  kLog,
  kAbs,
  kGelu,
  kSoftplus,
  kLeakyRelu,
  kElu,
  kSelu,
  kReciprocal,
  kSoftsign,
  kHardSigmoid,
  kSin,
  kCos,
  kMish,
  kHardSwish,
  kNeg,
  kCeil,
  kFloor,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kCelu,
  kThresholdedRelu,
  kShrink,
  kRound,
  kSign,
};

/// Attribute values a unary function reads (LeakyRelu/Elu/Selu/HardSigmoid/Celu/ThresholdedRelu
/// alpha, Shrink's bias (beta) and lambd (gamma) …).
struct UnaryParams {
  double alpha = 0, beta = 0, gamma = 0;
  bool tanh_gelu = false;  ///< Gelu approximate="tanh"
};

namespace unary_math {

inline constexpr double kSqrt2 = 1.4142135623730951;
inline constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1/sqrt(2 pi)
inline constexpr double kSqrt2OverPi = 0.7978845608028654;

PLANNER_RT_HD inline double clamp01(double v) {
  return v < 0.0 ? 0.0 : (1.0 < v ? 1.0 : v);  // std::clamp(v, 0, 1), NaN passes through
}
PLANNER_RT_HD inline double softplus(double x) {
  return x > 0 ? x + ::log1p(::exp(-x)) : ::log1p(::exp(x));
}
PLANNER_RT_HD inline double sigmoid(double x) {
  // Two branches keep exp() from overflowing for large |x|.
  if (x >= 0) return 1.0 / (1.0 + ::exp(-x));
  double e = ::exp(x);
  return e / (1.0 + e);
}

/// f(x).
PLANNER_RT_HD inline double value(UnaryOp op, const UnaryParams& p, double x) {
  switch (op) {
    case UnaryOp::kRelu:
      return x > 0 ? x : 0.0;
    case UnaryOp::kSigmoid:
      return sigmoid(x);
    case UnaryOp::kTanh:
      return ::tanh(x);
    case UnaryOp::kErf:
      return ::erf(x);
    case UnaryOp::kSqrt:
      return ::sqrt(x);
    case UnaryOp::kExp:
      return ::exp(x);
    case UnaryOp::kLog:
      return ::log(x);
    case UnaryOp::kAbs:
      return ::fabs(x);
    case UnaryOp::kNeg:
      return -x;
    case UnaryOp::kGelu:
      if (p.tanh_gelu) return 0.5 * x * (1 + ::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1 + ::erf(x / kSqrt2));
    case UnaryOp::kSoftplus:
      return softplus(x);
    case UnaryOp::kLeakyRelu:
      return x >= 0 ? x : p.alpha * x;
    case UnaryOp::kElu:
      return x >= 0 ? x : p.alpha * (::exp(x) - 1);
    case UnaryOp::kSelu:
      return p.gamma * (x > 0 ? x : p.alpha * (::exp(x) - 1));
    case UnaryOp::kReciprocal:
      return 1.0 / x;
    case UnaryOp::kSoftsign:
      return x / (1 + ::fabs(x));
    case UnaryOp::kHardSigmoid:
      return clamp01(p.alpha * x + p.beta);
    case UnaryOp::kSin:
      return ::sin(x);
    case UnaryOp::kCos:
      return ::cos(x);
    case UnaryOp::kMish:
      return x * ::tanh(softplus(x));
    case UnaryOp::kHardSwish:
      return x * clamp01(x / 6 + 0.5);
    case UnaryOp::kCeil:
      return ::ceil(x);
    case UnaryOp::kFloor:
      return ::floor(x);
    case UnaryOp::kTan:
      return ::tan(x);
    case UnaryOp::kAsin:
      return ::asin(x);
    case UnaryOp::kAcos:
      return ::acos(x);
    case UnaryOp::kAtan:
      return ::atan(x);
    case UnaryOp::kSinh:
      return ::sinh(x);
    case UnaryOp::kCosh:
      return ::cosh(x);
    case UnaryOp::kAsinh:
      return ::asinh(x);
    case UnaryOp::kAcosh:
      return ::acosh(x);
    case UnaryOp::kAtanh:
      return ::atanh(x);
    case UnaryOp::kCelu:  // max(0, x) + min(0, alpha (exp(x / alpha) - 1))
      return x > 0 ? x : p.alpha * (::exp(x / p.alpha) - 1);
    case UnaryOp::kThresholdedRelu:
      return x > p.alpha ? x : 0.0;
    case UnaryOp::kShrink:
      return x < -p.gamma ? x + p.beta : (x > p.gamma ? x - p.beta : 0.0);
    case UnaryOp::kRound:
      return ::nearbyint(x);  // halves to even in the default rounding mode, as ONNX says
    case UnaryOp::kSign:
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : x);  // NaN stays NaN
  }
  return 0;
}

/// f'(x), given x and y = f(x).
PLANNER_RT_HD inline double derivative(UnaryOp op, const UnaryParams& p, double x, double y) {
  switch (op) {
    case UnaryOp::kRelu:
      return x > 0 ? 1.0 : 0.0;
    case UnaryOp::kSigmoid:
      return y * (1 - y);
    case UnaryOp::kTanh:
      return 1 - y * y;
    case UnaryOp::kErf:
      return 2 * kInvSqrt2Pi * kSqrt2 * ::exp(-x * x);
    case UnaryOp::kSqrt:
      return 0.5 / y;
    case UnaryOp::kExp:
      return y;
    case UnaryOp::kLog:
      return 1.0 / x;
    case UnaryOp::kAbs:
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    case UnaryOp::kNeg:
      return -1.0;
    case UnaryOp::kGelu:
      if (p.tanh_gelu) {
        double u = kSqrt2OverPi * (x + 0.044715 * x * x * x);
        double t = ::tanh(u);
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kSqrt2OverPi * (1 + 3 * 0.044715 * x * x);
      }
      return 0.5 * (1 + ::erf(x / kSqrt2)) + x * kInvSqrt2Pi * ::exp(-0.5 * x * x);
    case UnaryOp::kSoftplus:
      return sigmoid(x);
    case UnaryOp::kLeakyRelu:
      return x > 0 ? 1.0 : p.alpha;
    case UnaryOp::kElu:
      return x > 0 ? 1.0 : p.alpha * ::exp(x);
    case UnaryOp::kSelu:
      return p.gamma * (x > 0 ? 1.0 : p.alpha * ::exp(x));
    case UnaryOp::kReciprocal:
      return -y * y;
    case UnaryOp::kSoftsign: {
      double d = 1 + ::fabs(x);
      return 1.0 / (d * d);
    }
    case UnaryOp::kHardSigmoid: {
      double v = p.alpha * x + p.beta;
      return v > 0 && v < 1 ? p.alpha : 0.0;
    }
    case UnaryOp::kSin:
      return ::cos(x);
    case UnaryOp::kCos:
      return -::sin(x);
    case UnaryOp::kMish: {
      double t = ::tanh(softplus(x));
      return t + x * sigmoid(x) * (1 - t * t);
    }
    case UnaryOp::kHardSwish:
      return x < -3 ? 0.0 : (x > 3 ? 1.0 : x / 3 + 0.5);
    case UnaryOp::kCeil:
    case UnaryOp::kFloor:
    case UnaryOp::kRound:
    case UnaryOp::kSign:
      return 0.0;
    case UnaryOp::kTan:
      return 1 + y * y;
    case UnaryOp::kAsin:
      return 1 / ::sqrt(1 - x * x);
    case UnaryOp::kAcos:
      return -1 / ::sqrt(1 - x * x);
    case UnaryOp::kAtan:
      return 1 / (1 + x * x);
    case UnaryOp::kSinh:
      return ::cosh(x);
    case UnaryOp::kCosh:
      return ::sinh(x);
    case UnaryOp::kAsinh:
      return 1 / ::sqrt(x * x + 1);
    case UnaryOp::kAcosh:
      return 1 / ::sqrt(x * x - 1);
    case UnaryOp::kAtanh:
      return 1 / (1 - x * x);
    case UnaryOp::kCelu:
      return x > 0 ? 1.0 : ::exp(x / p.alpha);
    case UnaryOp::kThresholdedRelu:
      return x > p.alpha ? 1.0 : 0.0;
    case UnaryOp::kShrink:
      return x < -p.gamma || x > p.gamma ? 1.0 : 0.0;
  }
  return 0;
}

}  // namespace unary_math

/// UnaryGrad op=Clip's bounds (the attributes min and max; absent: not `bounded`).
struct ClipBounds {
  bool bounded = false;
  float lo = 0, hi = 0;
};

/// Clip's gradient passes where the input lay inside the bounds, ends included (torch.clamp's
/// rule): `bounded` where the bounds are known (the training graph records constant bounds as
/// the attributes min and max), else where the forward pass left the input unchanged (y == x).
PLANNER_RT_HD inline float clip_grad_element(float dy, float x, float y, bool bounded, float lo,
                                             float hi) {
  const bool passes = bounded ? (lo <= x && x <= hi) : x == y;
  return passes ? dy : 0.0f;
}

}  // namespace planner::rt::kernels
