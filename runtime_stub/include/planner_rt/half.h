// 16-bit floating-point storage: conversions between f32 and IEEE half (f16), bfloat16 (bf16),
// TF32 and FP8 (e4m3) operand rounding, as inline functions callable from host and device code,
// so the cpu backend's emulation and the cuda backend's conversion kernels round identically.
//
// Every narrowing rounds to nearest, ties to even (what cuBLAS, cuDNN and PyTorch's .half() /
// .bfloat16() do); f16 keeps subnormals, overflows to infinity, and NaN stays NaN (quiet).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PLANNER_RT_HD __host__ __device__
#else
#define PLANNER_RT_HD
#endif

namespace planner::rt {

/// The bits of a float.
PLANNER_RT_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

/// The float with bits `u`.
PLANNER_RT_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// The value of IEEE binary16 bits `h` (exact: every half is a float).
PLANNER_RT_HD inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return bits_float(float_bits(v) | sign);
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf, NaN (payload kept)
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// `f` rounded to the nearest IEEE binary16, ties to even: subnormal halves for tiny values,
/// infinity past 65504 (from 65520 on), NaN as a quiet NaN.
PLANNER_RT_HD inline uint16_t f32_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;  // the half's biased exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    // Subnormal half (or zero): shift the 24-bit significand into 10 bits, rounding.
    if (e < -10) return sign;  // below half the smallest subnormal: rounds to zero
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  // A carry out of the mantissa moves to the next binade, or to infinity: both correct.
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

/// The value of bfloat16 bits `h` (the high half of a float).
PLANNER_RT_HD inline float bf16_to_f32(uint16_t h) {
  return bits_float(static_cast<uint32_t>(h) << 16);
}

/// `f` rounded to the nearest bfloat16, ties to even; NaN stays a (quiet) NaN.
PLANNER_RT_HD inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);  // overflow rounds to infinity
  return static_cast<uint16_t>(rounded >> 16);
}

/// `f` rounded to TF32 (8-bit exponent, 10-bit mantissa), ties to even: the operand rounding
/// of TF32 tensor-core matmuls and convolutions. Infinities and NaN are returned unchanged.
PLANNER_RT_HD inline float round_to_tf32(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7f800000u) == 0x7f800000u) return f;
  const uint32_t rounded = (x + 0xfffu + ((x >> 13) & 1u)) & ~0x1fffu;
  return bits_float(rounded);
}

/// `f` with its mantissa rounded to 3 bits, ties to even: the relative precision of an FP8 e4m3
/// matmul operand (torchao's Float8Linear, Transformer Engine). Sign and exponent are kept and
/// the range is NOT limited to e4m3's (+-448, subnormals below 2^-6): this emulates FP8 with
/// ideal per-tensor scaling, where the scale-and-cast preserves each element's relative
/// precision, not its magnitude range. A carry out of the mantissa moves to the next binade
/// (1.9375 -> 2); a value within half an ulp of FLT_MAX rounds to infinity. Zero, infinities and
/// NaN are returned unchanged. f32 subnormals keep 3 bits of their mantissa field.
PLANNER_RT_HD inline float round_to_fp8_mantissa(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7f800000u) == 0x7f800000u) return f;
  const uint32_t rounded = (x + 0x7ffffu + ((x >> 20) & 1u)) & ~0xfffffu;
  return bits_float(rounded);
}

/// `f` rounded to f16 and back (the value an f16 tensor would hold).
PLANNER_RT_HD inline float round_to_f16(float f) {
  return f16_to_f32(f32_to_f16(f));
}

/// `f` rounded to bf16 and back.
PLANNER_RT_HD inline float round_to_bf16(float f) {
  return bf16_to_f32(f32_to_bf16(f));
}

}  // namespace planner::rt
