// Helpers shared by the runtime tests: owned test tensors, kernel calls, finite differences.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "planner_rt/kernels.h"
#include "planner_rt/random.h"
#include "planner_rt/tensor.h"

namespace rt_test {

using planner::rt::Attributes;
using planner::rt::DType;
using planner::rt::Shape;
using planner::rt::Tensor;

/// A tensor with its own storage (8-byte aligned), for tests.
struct Buf {
  std::shared_ptr<std::vector<uint64_t>> store;
  Tensor t;
  Buf() = default;
  Buf(DType d, Shape s) {
    size_t bytes = static_cast<size_t>(planner::rt::num_elements(s)) * planner::rt::dtype_size(d);
    store = std::make_shared<std::vector<uint64_t>>(bytes / 8 + 1, 0);
    t = Tensor(d, std::move(s), store->data());
  }
  float* f() const { return t.as<float>(); }
  int64_t n() const { return t.numel(); }
  std::vector<float> values() const { return std::vector<float>(f(), f() + n()); }
  Buf clone() const {
    Buf b(t.dtype, t.shape);
    std::memcpy(b.t.data, t.data, t.bytes());
    return b;
  }
};

inline Buf F(Shape s, std::vector<float> v) {
  Buf b(DType::kFloat32, std::move(s));
  REQUIRE(static_cast<int64_t>(v.size()) == b.n());
  if (!v.empty()) std::memcpy(b.t.data, v.data(), v.size() * 4);  // data() may be null
  return b;
}
inline Buf I64(Shape s, std::vector<int64_t> v) {
  Buf b(DType::kInt64, std::move(s));
  REQUIRE(static_cast<int64_t>(v.size()) == b.n());
  if (!v.empty()) std::memcpy(b.t.data, v.data(), v.size() * 8);  // data() may be null
  return b;
}
inline Buf Bools(Shape s, std::vector<int> v) {
  Buf b(DType::kBool, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) b.t.as<bool>()[i] = v[i] != 0;
  return b;
}
inline Buf Z(Shape s, DType d = DType::kFloat32) {
  return Buf(d, std::move(s));
}
/// Uniform values in [lo, hi) from the runtime's own initialiser.
inline Buf R(Shape s, uint64_t seed, double lo = -1, double hi = 1) {
  Buf b(DType::kFloat32, std::move(s));
  planner::rt::fill_uniform(b.t, seed, "test", lo, hi);
  return b;
}

inline void run(std::string_view op, const Attributes& attrs, std::vector<Tensor> ins,
                std::vector<Tensor> outs, std::string_view domain = "") {
  planner::rt::run_kernel(domain, op, attrs, ins, outs, "n");
}
inline void run_planner(std::string_view op, const Attributes& attrs, std::vector<Tensor> ins,
                        std::vector<Tensor> outs) {
  run(op, attrs, std::move(ins), std::move(outs), planner::rt::kPlannerDomain);
}

/// Expects |a - b| <= atol + rtol * |b| element-wise, printing the first failing index.
inline void expect_close(const std::vector<float>& a, const std::vector<float>& b,
                         double atol = 1e-5, double rtol = 1e-5) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]))) {
      INFO("index " << i << ": actual " << a[i] << ", expected " << b[i]);
      CHECK(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]));
      return;
    }
  }
}

/// Central differences of L(x) = sum(forward(x) * w) against `analytic` = dL/dx.
/// `forward` reads the (perturbed) buffer `x`.
inline void check_grad(const std::function<std::vector<float>()>& forward, const Buf& x,
                       const std::vector<float>& w, const std::vector<float>& analytic,
                       double eps = 1e-2, double atol = 5e-3, double rtol = 2e-2) {
  REQUIRE(static_cast<int64_t>(analytic.size()) == x.n());
  auto loss = [&] {
    std::vector<float> y = forward();
    REQUIRE(y.size() == w.size());
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * w[i];
    return l;
  };
  std::vector<float> numeric(analytic.size());
  for (int64_t i = 0; i < x.n(); ++i) {
    const float keep = x.f()[i];
    x.f()[i] = keep + static_cast<float>(eps);
    double lp = loss();
    x.f()[i] = keep - static_cast<float>(eps);
    double lm = loss();
    x.f()[i] = keep;
    numeric[static_cast<size_t>(i)] = static_cast<float>((lp - lm) / (2 * eps));
  }
  expect_close(analytic, numeric, atol, rtol);
}

}  // namespace rt_test
