// The precision boundary: kernels called on f16 / bf16 tensors compute in f32 and round their
// results; tensor-core operators round their operands (16-bit under mixed precision, TF32 when
// switched on), matrix products their matrix operands to FP8's mantissa when that is switched
// on; 16-bit buffers take 2 bytes an element; collectives reduce 16-bit buffers in
// f32 and round.
#include <cmath>
#include <thread>

#include "planner_rt/collectives.h"
#include "planner_rt/half.h"
#include "planner_rt/precision.h"
#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::bf16_to_f32;
using planner::rt::f16_to_f32;
using planner::rt::f32_to_bf16;
using planner::rt::f32_to_f16;

namespace {

// A 16-bit tensor (f16 or bf16) holding `v` rounded.
Buf H(DType d, Shape s, const std::vector<float>& v) {
  Buf b(d, std::move(s));
  auto* bits = static_cast<uint16_t*>(b.t.data);
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] = d == DType::kFloat16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
  return b;
}

std::vector<float> values(const Buf& b) {
  std::vector<float> out;
  const auto* bits = static_cast<const uint16_t*>(b.t.data);
  for (int64_t i = 0; i < b.n(); ++i)
    out.push_back(b.t.dtype == DType::kFloat16 ? f16_to_f32(bits[i]) : bf16_to_f32(bits[i]));
  return out;
}

const float kTiny = std::ldexp(1.0f, -12);  // below half an f16 / TF32 ulp of 1

}  // namespace

TEST_CASE("16-bit buffers take two bytes an element") {
  planner::rt::Allocator alloc;
  planner::rt::TensorBuffer a(alloc, DType::kFloat16, {10, 10});
  planner::rt::TensorBuffer b(alloc, DType::kBFloat16, {3});
  CHECK(alloc.current_bytes() == 206);
  CHECK(planner::rt::dtype_name(DType::kBFloat16) == "bf16");
  CHECK(planner::rt::dtype_from_name("bf16") == DType::kBFloat16);
}

TEST_CASE("element-wise kernels on mixed f16 / f32 inputs compute in f32 and round once") {
  // 1 + 2^-11 is a tie between two halves: the f32 sum rounds to even (1.0), while rounding
  // each operand first and adding in half would not see the f32 bias at all.
  Buf a = H(DType::kFloat16, {2}, {1.0f, 2.0f});
  Buf b = F({2}, {std::ldexp(1.0f, -11), std::ldexp(3.0f, -11)});
  Buf y(DType::kFloat16, {2});
  run("Add", {}, {a.t, b.t}, {y.t});
  // 2 + 3*2^-11 is past half an ulp (2^-10) of 2: up to 2 + 2^-9.
  CHECK(values(y) == std::vector<float>{1.0f, 2.0f + std::ldexp(1.0f, -9)});
  Buf r(DType::kBFloat16, {2});
  run("Relu", {}, {H(DType::kBFloat16, {2}, {-1.5f, 3.25f}).t}, {r.t});
  CHECK(values(r) == std::vector<float>{0.0f, 3.25f});
}

TEST_CASE("a tensor-core operator rounds its f32 operands to the 16-bit type, not an f32 result") {
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    const float small = d == DType::kFloat16 ? std::ldexp(1.0f, -11) : std::ldexp(1.0f, -8);
    Buf x = H(d, {1, 2}, {1.0f, small});
    Buf w = F({2, 1}, {1.0f + kTiny, 1.0f});
    Buf y = Z({1, 1});  // an f32 result (a parameter gradient) of 16-bit operands
    run("MatMul", {}, {x.t, w.t}, {y.t});
    // The weight is cast (1 + 2^-12 -> 1); the f32 sum 1 + u keeps what a 16-bit result
    // would round away (a tie, to even: 1).
    CHECK(y.f()[0] == 1.0f + small);
    Buf yh(d, {1, 1});
    run("MatMul", {}, {x.t, w.t}, {yh.t});
    CHECK(values(yh)[0] == 1.0f);
    Buf w1 = F({2, 1}, {1.0f + kTiny, 1.0f + kTiny});
    x = H(d, {1, 2}, {1.0f, 1.0f});
    run("MatMul", {}, {x.t, w1.t}, {y.t});
    CHECK(y.f()[0] == 2.0f);  // without the operand cast: 2 + 2^-11
    // The same operator on f32 operands alone is plain f32.
    Buf x32 = F({1, 2}, {1.0f, 1.0f});
    run("MatMul", {}, {x32.t, w1.t}, {y.t});
    CHECK(y.f()[0] == 2.0f + 2 * kTiny);
  }
}

TEST_CASE("TF32 rounds the matrix operands of MatMul, Gemm and Conv, not other kernels") {
  Buf a = F({1, 1}, {1.0f + kTiny});
  Buf b = F({1, 1}, {3.0f});
  Buf y = Z({1, 1});
  planner::rt::set_tf32(true);
  run("MatMul", {}, {a.t, b.t}, {y.t});
  const float tf32_matmul = y.f()[0];
  run("Gemm", {}, {a.t, b.t, F({1}, {kTiny}).t}, {y.t});
  const float tf32_gemm = y.f()[0];
  Buf yc = Z({1, 1, 1, 1});
  run("Conv", {}, {F({1, 1, 1, 1}, {1.0f + kTiny}).t, F({1, 1, 1, 1}, {3.0f}).t}, {yc.t});
  const float tf32_conv = yc.f()[0];
  run("Mul", {}, {a.t, b.t}, {y.t});
  const float tf32_mul = y.f()[0];
  planner::rt::set_tf32(false);
  CHECK(tf32_matmul == 3.0f);
  CHECK(tf32_gemm == 3.0f + kTiny);  // the bias stays f32
  CHECK(tf32_conv == 3.0f);
  CHECK(tf32_mul == 3.0f + 3 * kTiny);
  run("MatMul", {}, {a.t, b.t}, {y.t});
  CHECK(y.f()[0] == 3.0f + 3 * kTiny);
}

namespace {

// set_fp8(true) for a scope: restored to false however the scope ends.
struct Fp8On {
  Fp8On() { planner::rt::set_fp8(true); }
  ~Fp8On() { planner::rt::set_fp8(false); }
  Fp8On(const Fp8On&) = delete;
  Fp8On& operator=(const Fp8On&) = delete;
};

std::vector<float> fp8(std::vector<float> v) {
  for (float& x : v) x = planner::rt::round_to_fp8_mantissa(x);
  return v;
}

// Y[r][n] = sum_k A[r][k] B'[k][n] by hand, B' = B (b_kn) or B^T (b [n][k]); in double, which is
// exact for the few-bit values these tests multiply (and so equal to any f32 summation order).
std::vector<float> product(const std::vector<float>& a, const std::vector<float>& b, int rows,
                           int k, int n, bool b_nk) {
  std::vector<float> y(static_cast<size_t>(rows * n));
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int i = 0; i < k; ++i)
        acc += static_cast<double>(a[static_cast<size_t>(r * k + i)]) *
               b[static_cast<size_t>(b_nk ? j * k + i : i * n + j)];
      y[static_cast<size_t>(r * n + j)] = static_cast<float>(acc);
    }
  return y;
}

// The transpose of a rows x cols matrix.
std::vector<float> transposed(const std::vector<float>& a, int rows, int cols) {
  std::vector<float> t(a.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      t[static_cast<size_t>(c * rows + r)] = a[static_cast<size_t>(r * cols + c)];
  return t;
}

}  // namespace

TEST_CASE("FP8 rounds the matrix operands of MatMul, Gemm, MatMulTransB, MatMulGradWeight") {
  CHECK_FALSE(planner::rt::fp8_enabled());  // off by default
  // Values a 3-bit mantissa rounds: 1.0625 and 1.1875 are ties (to 1 and 1.25), 1.9375 carries
  // into the exponent (2); 3, 1.5 and 1 are FP8 values. Every product and sum here is exact in
  // f32, so the kernels' results equal the hand computation bit for bit.
  const std::vector<float> av = {1.0625f, 1.1875f, 1.9375f, 1.0f};
  const std::vector<float> bv = {3.0f, 1.9375f, 1.0625f, 1.5f};
  REQUIRE(fp8(av) == std::vector<float>{1.0f, 1.25f, 2.0f, 1.0f});
  REQUIRE(fp8(bv) == std::vector<float>{3.0f, 2.0f, 1.0f, 1.5f});
  Buf a = F({2, 2}, av), b = F({2, 2}, bv), bias = F({2}, {1.0625f, -1.1875f});
  Buf y = Z({2, 2}), yg = Z({2, 2}), yt = Z({2, 2}), dw = Z({2, 2}), ym = Z({2, 2}),
      yc = Z({1, 1, 1, 1});
  auto run_all = [&] {
    run("MatMul", {}, {a.t, b.t}, {y.t});
    run("Gemm", {}, {a.t, b.t, bias.t}, {yg.t});
    run_planner("MatMulTransB", {}, {a.t, b.t}, {yt.t});
    run_planner("MatMulGradWeight", {}, {a.t, b.t}, {dw.t});
    run("Mul", {}, {a.t, b.t}, {ym.t});
    run("Conv", {}, {F({1, 1, 1, 1}, {1.0625f}).t, F({1, 1, 1, 1}, {3.0f}).t}, {yc.t});
  };
  auto expect = [&](const std::vector<float>& x, const std::vector<float>& w) {
    CHECK(y.values() == product(x, w, 2, 2, 2, false));
    std::vector<float> gemm = product(x, w, 2, 2, 2, false);
    for (size_t i = 0; i < gemm.size(); ++i) gemm[i] += bias.f()[i % 2];  // the bias as given
    CHECK(yg.values() == gemm);
    CHECK(yt.values() == product(x, w, 2, 2, 2, true));
    CHECK(dw.values() == product(transposed(x, 2, 2), w, 2, 2, 2, false));
    // Other operators compute from the values as given.
    CHECK(ym.values() ==
          std::vector<float>{1.0625f * 3.0f, 1.1875f * 1.9375f, 1.9375f * 1.0625f, 1.5f});
    CHECK(yc.f()[0] == 3.1875f);
  };
  {
    Fp8On on;
    CHECK(planner::rt::fp8_enabled());
    run_all();
    expect(fp8(av), fp8(bv));
    CHECK(y.f()[0] == 4.25f);     // 1 * 3 + 1.25 * 1, where the f32 product is 4.44921875
    CHECK(yg.f()[0] == 5.3125f);  // + the bias 1.0625, not rounded (to 1)
  }
  CHECK_FALSE(planner::rt::fp8_enabled());
  run_all();
  expect(av, bv);
  CHECK(y.f()[0] == 4.44921875f);
  // TF32 and FP8 together: the FP8 cast (its values are TF32 values) in place of TF32's.
  planner::rt::set_tf32(true);
  {
    Fp8On on;
    run("MatMul", {}, {a.t, b.t}, {y.t});
  }
  planner::rt::set_tf32(false);
  CHECK(y.values() == product(fp8(av), fp8(bv), 2, 2, 2, false));
}

TEST_CASE("FP8 casts bf16 activations and the 16-bit cast of f32 weights") {
  // bf16 activations (exact here) and an f32 weight whose bf16 cast (1.9375 + 2^-10 -> 1.9375)
  // comes before the FP8 one (-> 2); the results are f32 (a parameter gradient) or bf16.
  const std::vector<float> xv = {1.0625f, 1.1875f, 1.9375f, 1.0f};
  const std::vector<float> wv = {3.0f, 1.9375f + std::ldexp(1.0f, -10), 1.0625f, 1.5f};
  const std::vector<float> w16 = {3.0f, 1.9375f, 1.0625f, 1.5f};  // wv as bf16
  Buf x = H(DType::kBFloat16, {2, 2}, xv), w = F({2, 2}, wv);
  Buf dy = H(DType::kBFloat16, {2, 2}, w16);
  Buf y = Z({2, 2}), dw = Z({2, 2}), yh(DType::kBFloat16, {2, 2});
  {
    Fp8On on;
    run("MatMul", {}, {x.t, w.t}, {y.t});
    run("MatMul", {}, {x.t, w.t}, {yh.t});
    run_planner("MatMulGradWeight", {}, {x.t, dy.t}, {dw.t});
  }
  const std::vector<float> want = product(fp8(xv), fp8(w16), 2, 2, 2, false);
  CHECK(y.values() == want);
  CHECK(values(yh) == want);  // 4.25, 3.875, 7, 5.5: bf16 values
  CHECK(dw.values() == product(transposed(fp8(xv), 2, 2), fp8(w16), 2, 2, 2, false));
  // Without FP8: the bf16 operands as they are.
  run("MatMul", {}, {x.t, w.t}, {y.t});
  CHECK(y.values() == product(xv, w16, 2, 2, 2, false));
  run_planner("MatMulGradWeight", {}, {x.t, dy.t}, {dw.t});
  CHECK(dw.values() == product(transposed(xv, 2, 2), w16, 2, 2, 2, false));
}

TEST_CASE("Cast to and from 16-bit types goes through the boundary") {
  Buf y(DType::kBFloat16, {2});
  // A graph's Cast(to=FLOAT) whose output the precision pass made bf16.
  run("Cast", {{"to", int64_t{1}}}, {F({2}, {1.0f + std::ldexp(1.0f, -9), -2.0f}).t}, {y.t});
  CHECK(values(y) == std::vector<float>{1.0f, -2.0f});
  Buf back = Z({2});
  run("Cast", {{"to", int64_t{1}}}, {y.t}, {back.t});
  CHECK(back.values() == std::vector<float>{1.0f, -2.0f});
}

TEST_CASE("all_reduce of f16 and bf16 buffers sums in f32 and rounds") {
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    const float small = d == DType::kFloat16 ? std::ldexp(1.0f, -11) : std::ldexp(1.0f, -8);
    planner::rt::CpuWorld world(2, std::chrono::seconds(20));
    std::vector<std::vector<float>> got(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        planner::rt::Communicator c(world, r);
        Buf in = H(d, {2},
                   r == 0 ? std::vector<float>{1.0f, 3.0f} : std::vector<float>{small, 3 * small});
        Buf out(d, {2});
        c.all_reduce(in.t, out.t, planner::rt::ReduceOp::kSum);
        got[static_cast<size_t>(r)] = values(out);
      });
    for (auto& t : threads) t.join();
    for (const auto& v : got) {
      CHECK(v[0] == 1.0f);              // 1 + u: a tie, to even
      CHECK(v[1] == 3.0f + 4 * small);  // 3 + 3u rounds up to 3 + 4u (u = half ulp of 1)
    }
  }
}
