// Symbolic interval arithmetic over affine bounds in the symbolic sizes (Tofu, section 4.2).
//
// API: an Affine is Σ cᵢ·Sᵢ + c over named size symbols with rational coefficients; an
// Interval is [lo, hi] with Affine bounds (Tofu's ⟨l₁..lₙ, u₁..uₙ, c⟩, written as two bounds);
// a Region is one Interval per tensor dimension. Figure 4's arithmetic is here: ± constant,
// × constant, / constant, ± interval; `/` floors and `%` gives a conservative range. A product
// of two intervals that are not both constants fails (`multiply` returns an Error); callers
// add the operator and the expression to the message. Comparisons of symbolic bounds assume
// every size symbol is at least 1; where that cannot decide, callers fall back explicitly.
//   Interval x = Interval::range(Affine::symbol("X"));        // [0, X - 1]
//   auto halves = x.halves();                                  // [0, X/2 - 1], [X/2, X - 1]
//   to_string(halves[0] + Interval::point(2))                  // "[2, X/2 + 1]"
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/expected.h"

namespace planner::analysis {

/// An exact rational number num/den with den > 0 and gcd(num, den) = 1.
class Rational {
 public:
  Rational(int64_t value = 0) : num_(value), den_(1) {}  // NOLINT: integers convert implicitly
  Rational(int64_t num, int64_t den);

  int64_t num() const { return num_; }
  int64_t den() const { return den_; }
  bool is_integer() const { return den_ == 1; }
  int64_t floor() const;
  int64_t ceil() const;

  friend Rational operator+(Rational a, Rational b);
  friend Rational operator-(Rational a, Rational b);
  friend Rational operator*(Rational a, Rational b);
  friend Rational operator/(Rational a, Rational b);  ///< requires b != 0
  Rational operator-() const { return Rational(-num_, den_); }
  friend bool operator==(Rational a, Rational b) { return a.num_ == b.num_ && a.den_ == b.den_; }
  friend bool operator<(Rational a, Rational b);
  friend bool operator<=(Rational a, Rational b) { return !(b < a); }

  /// `3`, `-1/2`.
  std::string to_string() const;

 private:
  int64_t num_;
  int64_t den_;
};

/// Rational arithmetic saturates instead of overflowing int64 and records that it did, so that
/// hostile sizes or constants cannot crash the planner; analyze() clears the record before it
/// starts and reports an error when it is set afterwards. The record is per thread.
bool rational_overflowed();
/// Clears the overflow record (see rational_overflowed).
void clear_rational_overflow();

/// An affine form Σ cᵢ·Sᵢ + c over size symbols. Terms keep the order in which symbols first
/// appeared, so `X - DX + 1` prints as written; terms with a zero coefficient are dropped.
class Affine {
 public:
  Affine(Rational constant = 0) : constant_(constant) {}  // NOLINT: constants convert implicitly
  /// The symbol itself (coefficient 1).
  static Affine symbol(const std::string& name);

  const std::vector<std::pair<std::string, Rational>>& terms() const { return terms_; }
  Rational constant() const { return constant_; }
  /// True when no symbol has a non-zero coefficient.
  bool is_constant() const { return terms_.empty(); }
  /// The coefficient of `name` (0 when absent).
  Rational coefficient(const std::string& name) const;

  friend Affine operator+(const Affine& a, const Affine& b);
  friend Affine operator-(const Affine& a, const Affine& b);
  Affine operator-() const;
  friend Affine operator*(const Affine& a, Rational k);
  friend Affine operator/(const Affine& a, Rational k);  ///< requires k != 0
  friend bool operator==(const Affine& a, const Affine& b);

  /// Replaces the symbols that `values` binds by their values.
  Affine substitute(const std::map<std::string, int64_t>& values) const;

  /// Whether a <= b for every assignment of sizes >= 1; nullopt when that depends on the sizes.
  friend std::optional<bool> provably_le(const Affine& a, const Affine& b);

  /// `X/2 - 1`, `X - DX + 1`, `3*H/2`, `0`.
  std::string to_string() const;

 private:
  std::vector<std::pair<std::string, Rational>> terms_;
  Rational constant_;
};

/// A closed integer interval [lo, hi] with affine bounds. Concrete intervals (constant bounds)
/// with lo > hi are empty.
class Interval {
 public:
  Interval() = default;
  Interval(Affine lo, Affine hi) : lo_(std::move(lo)), hi_(std::move(hi)) {}
  /// [v, v].
  static Interval point(const Affine& v) { return Interval(v, v); }
  /// [0, extent - 1]: every index of a dimension of size `extent`.
  static Interval range(const Affine& extent) { return Interval(Affine(0), extent - Affine(1)); }

  const Affine& lo() const { return lo_; }
  const Affine& hi() const { return hi_; }
  /// True when both bounds are constants.
  bool is_concrete() const { return lo_.is_constant() && hi_.is_constant(); }
  /// True for a concrete interval with lo > hi.
  bool is_empty() const;
  /// True when lo == hi and it is a constant.
  bool is_constant_point() const { return is_concrete() && lo_ == hi_; }
  /// hi - lo + 1.
  Affine size() const { return hi_ - lo_ + Affine(1); }

  /// The two workers' halves of this interval: concrete sizes split with the larger half
  /// first (worker 0 gets ceil(n/2)); symbolic ones at lo + size/2 (Tofu's ZV[u = 1/2]).
  std::array<Interval, 2> halves() const;

  friend Interval operator+(const Interval& a, const Interval& b);
  friend Interval operator-(const Interval& a, const Interval& b);
  Interval operator-() const { return Interval(-hi_, -lo_); }
  /// × a constant (bounds swap for a negative one).
  friend Interval operator*(const Interval& a, Rational k);
  friend bool operator==(const Interval& a, const Interval& b) {
    return a.lo_ == b.lo_ && a.hi_ == b.hi_;
  }

  /// Floor division by a positive constant; conservative for symbolic bounds.
  Interval floor_div(int64_t k) const;
  /// Remainder by a positive constant: exact when a concrete interval stays within one period,
  /// [0, k - 1] otherwise.
  Interval mod(int64_t k) const;

  /// Replaces bound symbols by values.
  Interval substitute(const std::map<std::string, int64_t>& values) const {
    return Interval(lo_.substitute(values), hi_.substitute(values));
  }

  /// Concrete integer bounds once `sizes` are substituted, rounded outwards (floor of lo, ceil
  /// of hi) so the result covers every index the rational bounds may stand for; nullopt while
  /// a symbol stays unbound. Symbolic halves of an odd extent overlap by one after rounding;
  /// analyze() with concrete sizes splits exactly instead.
  std::optional<std::pair<int64_t, int64_t>> evaluate(
      const std::map<std::string, int64_t>& sizes) const;

  /// `[0, X/2 - 1]`.
  std::string to_string() const;
  /// `0..X/2 - 1` (the form regions use).
  std::string to_range_string() const;

 private:
  Affine lo_;
  Affine hi_;
};

/// The product of two intervals: defined when one of them is a constant point; otherwise an
/// Error "product of two intervals [..] and [..] is not affine".
Expected<Interval> multiply(const Interval& a, const Interval& b);

/// The smallest interval holding both where provable; dimensions whose bounds cannot be
/// ordered take `fallback` (the whole dimension) for that bound.
Interval hull(const Interval& a, const Interval& b, const Interval& fallback);

/// `a` clipped to `bounds` where provable (a bound that cannot be compared stays as is).
Interval clip(const Interval& a, const Interval& bounds);

/// One interval per dimension of a tensor: the part of it a worker reads or writes.
struct Region {
  std::vector<Interval> dims;

  int rank() const { return static_cast<int>(dims.size()); }
  /// True when some dimension is a concrete empty interval (the worker needs nothing).
  bool is_empty() const;
  friend bool operator==(const Region& a, const Region& b) { return a.dims == b.dims; }
  /// Every dimension's Interval::evaluate; nullopt while a symbol stays unbound.
  std::optional<std::vector<std::pair<int64_t, int64_t>>> evaluate(
      const std::map<std::string, int64_t>& sizes) const;
  /// `[0..14, 0..3, 0..16]`; `empty` for an empty region; `[]` for a scalar.
  std::string to_string() const;
};

}  // namespace planner::analysis
