// Optimizer updates of the ai.planner domain: SGD, Momentum, Adam (one parameter per call).
#include <cmath>

#include "kernel_util.h"
#include "train_math.h"

namespace planner::rt::kernels {

namespace {

// Checks that inputs [0, n) and every present output are f32 with the parameter's shape.
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

void k_sgd(const KernelContext& ctx) {
  // (param, grad) -> param - lr * grad * grad_scale
  check_same(ctx, 2, 1);
  const float lr = static_cast<float>(ctx.attr_float("lr", 0.01));
  const float gs = static_cast<float>(ctx.attr_float("grad_scale", 1.0));
  const float* p = ctx.in(0).as<float>();
  const float* g = ctx.in(1).as<float>();
  float* out = ctx.out(0).as<float>();
  for (int64_t i = 0; i < ctx.in(0).numel(); ++i) out[i] = sgd_element(p[i], g[i], lr, gs);
}

void k_momentum(const KernelContext& ctx) {
  // (param, grad, velocity) -> (param - lr * v', v') with v' = momentum * v + grad * grad_scale
  check_same(ctx, 3, 2);
  const float lr = static_cast<float>(ctx.attr_float("lr", 0.01));
  const float mu = static_cast<float>(ctx.attr_float("momentum", 0.9));
  const float gs = static_cast<float>(ctx.attr_float("grad_scale", 1.0));
  const float* p = ctx.in(0).as<float>();
  const float* g = ctx.in(1).as<float>();
  const float* v = ctx.in(2).as<float>();
  float* po = ctx.out(0).as<float>();
  float* vo = ctx.out(1).as<float>();
  for (int64_t i = 0; i < ctx.in(0).numel(); ++i)
    po[i] = momentum_element(p[i], g[i], v[i], lr, mu, gs, &vo[i]);
}

void k_adam(const KernelContext& ctx) {
  // (param, grad, m, v[, step]) -> (param', m', v'):
  //   g *= grad_scale; m' = b1 m + (1 - b1) g;  v' = b2 v + (1 - b2) g^2
  //   param' = param - lr * (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps)
  // t is the optional scalar input 4 or the attribute "step" (default 1, the first step).
  check_same(ctx, 4, 3);
  const double lr = ctx.attr_float("lr", 0.001), b1 = ctx.attr_float("beta1", 0.9),
               b2 = ctx.attr_float("beta2", 0.999), eps = ctx.attr_float("epsilon", 1e-8);
  double t = static_cast<double>(ctx.attr_int("step", 1));
  if (ctx.has_in(4)) {
    if (ctx.in(4).numel() != 1) ctx.fail("step must be a scalar");
    t = load_as_double(ctx.in(4), 0);
  }
  if (t < 1) ctx.fail("step must be at least 1");
  const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
  const float* p = ctx.in(0).as<float>();
  const float* g = ctx.in(1).as<float>();
  const float* m = ctx.in(2).as<float>();
  const float* v = ctx.in(3).as<float>();
  float* po = ctx.out(0).as<float>();
  float* mo = ctx.out(1).as<float>();
  float* vo = ctx.out(2).as<float>();
  const double gs = ctx.attr_float("grad_scale", 1.0);
  for (int64_t i = 0; i < ctx.in(0).numel(); ++i)
    po[i] = adam_element(p[i], g[i], m[i], v[i], lr, b1, b2, eps, c1, c2, gs, &mo[i], &vo[i]);
}

}  // namespace planner::rt::kernels
