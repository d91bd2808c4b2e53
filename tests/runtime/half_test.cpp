// The 16-bit conversions of planner_rt/half.h: exhaustive round trips, known rounding cases
// (16-bit, TF32 and FP8 operand rounding), and (where the compiler has _Float16) every f16
// rounding against the compiler's.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <ios>
#include <limits>

#include "planner_rt/half.h"

using namespace planner::rt;

namespace {

bool same_bits_or_both_nan(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return float_bits(a) == float_bits(b);
}

}  // namespace

TEST_CASE("every f16 bit pattern survives f16 -> f32 -> f16") {
  int nans = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      ++nans;
      CHECK((f32_to_f16(f) & 0x7c00) == 0x7c00);  // stays NaN
      CHECK((f32_to_f16(f) & 0x3ff) != 0);
      continue;
    }
    INFO("bits 0x" << std::hex << h << " value " << f);
    REQUIRE(f32_to_f16(f) == h);
  }
  CHECK(nans == 2 * 1023);
}

TEST_CASE("every bf16 bit pattern survives bf16 -> f32 -> bf16") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(bf16_to_f32(f32_to_bf16(f))));
      continue;
    }
    INFO("bits 0x" << std::hex << h);
    REQUIRE(f32_to_bf16(f) == h);
  }
}

TEST_CASE("f16 values and rounding to nearest even") {
  CHECK(f16_to_f32(0x3c00) == 1.0f);
  CHECK(f16_to_f32(0xc000) == -2.0f);
  CHECK(f16_to_f32(0x7bff) == 65504.0f);
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(std::isinf(f16_to_f32(0x7c00)));
  CHECK(std::signbit(f16_to_f32(0x8000)));
  // Ties between 1 and 1 + 2^-10 go to the even mantissa; just past the tie goes up.
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(f32_to_f16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)) == 0x3c01);
  // Overflow: 65519.99 rounds to 65504, 65520 (the tie with 2^16) to infinity.
  CHECK(f32_to_f16(65519.0f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);
  CHECK(f32_to_f16(-1e10f) == 0xfc00);
  CHECK(f32_to_f16(std::numeric_limits<float>::infinity()) == 0x7c00);
  // Underflow: half the smallest subnormal is a tie with zero (even: zero); above it rounds up.
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);  // 1.5 subnormal ulps: tie to even (2)
  CHECK(f32_to_f16(-std::ldexp(1.0f, -30)) == 0x8000);
  // A subnormal that rounds up into the smallest normal.
  CHECK(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)) == 0x0400);
  CHECK(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("bf16 values and rounding to nearest even") {
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  // 1 + 2^-8 is the tie between 1 and 1 + 2^-7: even is 1. 1 + 3 * 2^-8 ties up to 1 + 2^-6.
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(f32_to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)) == 0x3f81);
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds to infinity
  CHECK(f32_to_bf16(-0.0f) == 0x8000);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A signalling-looking NaN whose payload is only in the low bits must not become infinity.
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(bits_float(0x7f800001u)))));
}

TEST_CASE("tf32 rounding keeps 10 mantissa bits, ties to even") {
  CHECK(round_to_tf32(1.0f) == 1.0f);
  CHECK(round_to_tf32(1.0f + std::ldexp(1.0f, -11)) == 1.0f);  // tie, even
  CHECK(round_to_tf32(1.0f + 3 * std::ldexp(1.0f, -11)) == 1.0f + std::ldexp(1.0f, -9));  // tie, up
  CHECK(round_to_tf32(1.0f + std::ldexp(1.0f, -12)) == 1.0f);
  CHECK(round_to_tf32(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)) ==
        1.0f + std::ldexp(1.0f, -10));
  CHECK((float_bits(round_to_tf32(3.14159265f)) & 0x1fffu) == 0);
  CHECK(std::isinf(round_to_tf32(std::numeric_limits<float>::infinity())));
  // TF32 has f32's range: values between f16's and f32's maxima survive.
  CHECK(round_to_tf32(1e30f) == doctest::Approx(1e30f).epsilon(1e-3));
}

TEST_CASE("fp8 operand rounding keeps 3 mantissa bits, ties to even, and f32's exponent") {
  const float two_m20 = std::ldexp(1.0f, -20);
  CHECK(round_to_fp8_mantissa(1.0f) == 1.0f);
  CHECK(round_to_fp8_mantissa(1.125f) == 1.125f);  // 1 + 2^-3: representable
  CHECK(round_to_fp8_mantissa(1.0625f) == 1.0f);   // tie between 1 and 1.125: even
  CHECK(round_to_fp8_mantissa(1.1875f) == 1.25f);  // tie between 1.125 and 1.25: even
  CHECK(round_to_fp8_mantissa(1.0624f) == 1.0f);   // below the tie
  CHECK(round_to_fp8_mantissa(std::nextafter(1.0625f, 2.0f)) == 1.125f);  // past it
  CHECK(round_to_fp8_mantissa(1.9375f) == 2.0f);  // tie, to even: carries into the exponent
  CHECK(round_to_fp8_mantissa(1.97f) == 2.0f);
  CHECK(round_to_fp8_mantissa(3.0f * two_m20) == 3.0f * two_m20);  // far below e4m3's range
  CHECK(round_to_fp8_mantissa(3.1f * two_m20) == 3.0f * two_m20);
  CHECK(round_to_fp8_mantissa(1792.0f) == 1792.0f);  // 1.75 * 2^10: past e4m3's 448, kept
  CHECK(round_to_fp8_mantissa(1e30f) == doctest::Approx(1e30f).epsilon(1.0 / 16));
  CHECK(round_to_fp8_mantissa(-1.0625f) == -1.0f);
  CHECK(round_to_fp8_mantissa(-1.1875f) == -1.25f);
  CHECK(round_to_fp8_mantissa(-1.9375f) == -2.0f);
  CHECK(round_to_fp8_mantissa(-3.0f * two_m20) == -3.0f * two_m20);
  CHECK(float_bits(round_to_fp8_mantissa(0.0f)) == 0u);
  CHECK(float_bits(round_to_fp8_mantissa(-0.0f)) == 0x80000000u);
  CHECK(round_to_fp8_mantissa(std::numeric_limits<float>::infinity()) ==
        std::numeric_limits<float>::infinity());
  CHECK(round_to_fp8_mantissa(-std::numeric_limits<float>::infinity()) ==
        -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(round_to_fp8_mantissa(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(round_to_fp8_mantissa(bits_float(0x7f800001u))));  // not made infinite
  // Every sign, exponent and top mantissa bits of a normal float, with low 20 bits at, around
  // and away from the tie, against round-half-even of the 4-bit significand.
  int64_t wrong = 0;
  uint32_t first_wrong = 0;
  for (uint32_t hi = 0; hi < (1u << 12); ++hi) {
    const uint32_t exp = (hi >> 3) & 0xffu;
    if (exp == 0 || exp == 0xff) continue;
    for (uint32_t lo : {0x00000u, 0x00001u, 0x7ffffu, 0x80000u, 0x80001u, 0xfffffu, 0x3c5a1u}) {
      const float f = bits_float((hi << 20) | lo);
      int e = 0;
      const float m = std::frexp(f, &e);  // |m| in [0.5, 1)
      double want = std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(m), 4)), e - 4);
      if (std::fabs(want) > std::numeric_limits<float>::max())  // past FLT_MAX: infinity
        want = std::copysign(std::numeric_limits<double>::infinity(), want);
      if (static_cast<double>(round_to_fp8_mantissa(f)) != want && wrong++ == 0)
        first_wrong = (hi << 20) | lo;
    }
  }
  INFO("first float that rounds differently: bits 0x" << std::hex << first_wrong);
  CHECK(wrong == 0);
}

#if defined(__FLT16_MAX__)
TEST_CASE("f32 <-> f16 agrees with the compiler's _Float16 on a sweep of floats") {
  // Every float whose low 9 bits are one of four patterns: 2^25 values covering every
  // exponent, ties (low 13 bits 0x1000), near-ties, subnormals, overflow, infinities and NaN.
  int64_t checked = 0, wrong = 0, wrong_back = 0;
  uint32_t first_wrong = 0;
  for (uint32_t hi = 0; hi < (1u << 23); ++hi) {
    for (uint32_t lo : {0x000u, 0x100u, 0x0ffu, 0x101u}) {
      const uint32_t bits = (hi << 9) | lo;
      const float f = bits_float(bits);
      const _Float16 ref = static_cast<_Float16>(f);
      uint16_t ref_bits;
      std::memcpy(&ref_bits, &ref, 2);
      const uint16_t got = f32_to_f16(f);
      const bool ok =
          std::isnan(f) ? ((got & 0x7c00) == 0x7c00 && (got & 0x3ff) != 0) : got == ref_bits;
      if (!ok && wrong++ == 0) first_wrong = bits;
      _Float16 h;
      std::memcpy(&h, &got, 2);
      if (!same_bits_or_both_nan(f16_to_f32(got), static_cast<float>(h))) ++wrong_back;
      ++checked;
    }
  }
  INFO("first float that rounds differently: bits 0x" << std::hex << first_wrong);
  CHECK(wrong == 0);
  CHECK(wrong_back == 0);
  CHECK(checked == 4 * (int64_t{1} << 23));
}
#endif
