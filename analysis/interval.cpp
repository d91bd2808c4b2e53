// Symbolic interval arithmetic (see interval.h).
#include "analysis/interval.h"

#include <cstdlib>
#include <numeric>

#include <fmt/format.h>

namespace planner::analysis {
namespace {

thread_local bool g_overflowed = false;

int64_t narrow(__int128 v) {
  // Saturate (leaving room for negation) and record: see rational_overflowed().
  constexpr int64_t kLimit = INT64_MAX / 2;
  if (v > kLimit || v < -kLimit) {
    g_overflowed = true;
    return v > 0 ? kLimit : -kLimit;
  }
  return static_cast<int64_t>(v);
}

Rational make_rational(__int128 num, __int128 den) {
  PLANNER_CHECK(den != 0, "division by zero");
  if (den < 0) num = -num, den = -den;
  __int128 a = num < 0 ? -num : num, b = den;
  while (b != 0) {
    __int128 t = a % b;
    a = b;
    b = t;
  }
  if (a > 1) num /= a, den /= a;
  return Rational(narrow(num), narrow(den));
}

}  // namespace

bool rational_overflowed() {
  return g_overflowed;
}
void clear_rational_overflow() {
  g_overflowed = false;
}

Rational::Rational(int64_t num, int64_t den) : num_(num), den_(den) {
  PLANNER_CHECK(den != 0, "zero denominator");
  if (den_ < 0) num_ = -num_, den_ = -den_;
  int64_t g = std::gcd(num_ < 0 ? -num_ : num_, den_);
  if (g > 1) num_ /= g, den_ /= g;
}

int64_t Rational::floor() const {
  int64_t q = num_ / den_;
  return (num_ % den_ != 0 && num_ < 0) ? q - 1 : q;
}

int64_t Rational::ceil() const {
  int64_t q = num_ / den_;
  return (num_ % den_ != 0 && num_ > 0) ? q + 1 : q;
}

Rational operator+(Rational a, Rational b) {
  return make_rational(
      static_cast<__int128>(a.num_) * b.den_ + static_cast<__int128>(b.num_) * a.den_,
      static_cast<__int128>(a.den_) * b.den_);
}
Rational operator-(Rational a, Rational b) {
  return a + (-b);
}
Rational operator*(Rational a, Rational b) {
  return make_rational(static_cast<__int128>(a.num_) * b.num_,
                       static_cast<__int128>(a.den_) * b.den_);
}
Rational operator/(Rational a, Rational b) {
  return make_rational(static_cast<__int128>(a.num_) * b.den_,
                       static_cast<__int128>(a.den_) * b.num_);
}
bool operator<(Rational a, Rational b) {
  return static_cast<__int128>(a.num_) * b.den_ < static_cast<__int128>(b.num_) * a.den_;
}

std::string Rational::to_string() const {
  return den_ == 1 ? std::to_string(num_) : fmt::format("{}/{}", num_, den_);
}

Affine Affine::symbol(const std::string& name) {
  Affine a;
  a.terms_.push_back({name, Rational(1)});
  return a;
}

Rational Affine::coefficient(const std::string& name) const {
  for (const auto& [n, c] : terms_)
    if (n == name) return c;
  return Rational(0);
}

Affine operator+(const Affine& a, const Affine& b) {
  Affine r = a;
  for (const auto& [name, c] : b.terms_) {
    bool found = false;
    for (auto& term : r.terms_) {
      if (term.first == name) {
        term.second = term.second + c;
        found = true;
        break;
      }
    }
    if (!found) r.terms_.push_back({name, c});
  }
  std::erase_if(r.terms_, [](const auto& t) { return t.second == Rational(0); });
  r.constant_ = a.constant_ + b.constant_;
  return r;
}

Affine Affine::operator-() const {
  Affine r = *this;
  for (auto& t : r.terms_) t.second = -t.second;
  r.constant_ = -r.constant_;
  return r;
}

Affine operator-(const Affine& a, const Affine& b) {
  return a + (-b);
}

Affine operator*(const Affine& a, Rational k) {
  if (k == Rational(0)) return Affine(0);
  Affine r = a;
  for (auto& t : r.terms_) t.second = t.second * k;
  r.constant_ = r.constant_ * k;
  return r;
}

Affine operator/(const Affine& a, Rational k) {
  return a * (Rational(1) / k);
}

bool operator==(const Affine& a, const Affine& b) {
  Affine d = a - b;
  return d.is_constant() && d.constant() == Rational(0);
}

Affine Affine::substitute(const std::map<std::string, int64_t>& values) const {
  Affine r(constant_);
  for (const auto& [name, c] : terms_) {
    auto it = values.find(name);
    r = r + (it != values.end() ? Affine(c * Rational(it->second)) : Affine::symbol(name) * c);
  }
  return r;
}

std::optional<bool> provably_le(const Affine& a, const Affine& b) {
  Affine d = b - a;
  if (d.is_constant()) return Rational(0) <= d.constant();
  bool all_nonneg = true, all_nonpos = true;
  Rational at_one = d.constant();
  for (const auto& [name, c] : d.terms()) {
    if (c < Rational(0)) all_nonneg = false;
    if (Rational(0) < c) all_nonpos = false;
    at_one = at_one + c;
  }
  // Sizes are at least 1: the difference is smallest (or largest) with every size at 1.
  if (all_nonneg && Rational(0) <= at_one) return true;
  if (all_nonpos && at_one < Rational(0)) return false;
  return std::nullopt;
}

std::string Affine::to_string() const {
  std::string out;
  for (const auto& [name, c] : terms_) {
    bool negative = c < Rational(0);
    Rational m = negative ? -c : c;
    std::string term;
    if (m.num() == 1)
      term = name;
    else
      term = fmt::format("{}*{}", m.num(), name);
    if (m.den() != 1) term += fmt::format("/{}", m.den());
    if (out.empty())
      out = negative ? "-" + term : term;
    else
      out += (negative ? " - " : " + ") + term;
  }
  if (out.empty()) return constant_.to_string();
  if (constant_ < Rational(0))
    out += " - " + (-constant_).to_string();
  else if (Rational(0) < constant_)
    out += " + " + constant_.to_string();
  return out;
}

bool Interval::is_empty() const {
  return is_concrete() && hi_.constant() < lo_.constant();
}

std::array<Interval, 2> Interval::halves() const {
  Affine n = size();
  if (n.is_constant()) {
    int64_t first = (n.constant() / Rational(2)).ceil();
    return {Interval(lo_, lo_ + Affine(first - 1)), Interval(lo_ + Affine(first), hi_)};
  }
  Affine mid = lo_ + n / Rational(2);
  return {Interval(lo_, mid - Affine(1)), Interval(mid, hi_)};
}

Interval operator+(const Interval& a, const Interval& b) {
  return Interval(a.lo_ + b.lo_, a.hi_ + b.hi_);
}
Interval operator-(const Interval& a, const Interval& b) {
  return Interval(a.lo_ - b.hi_, a.hi_ - b.lo_);
}
Interval operator*(const Interval& a, Rational k) {
  if (k < Rational(0)) return Interval(a.hi_ * k, a.lo_ * k);
  return Interval(a.lo_ * k, a.hi_ * k);
}

Interval Interval::floor_div(int64_t k) const {
  PLANNER_CHECK(k > 0, "floor_div by {}", k);
  // floor(x / k) >= (x - (k - 1)) / k: conservative where the bound is symbolic.
  Affine lo = lo_.is_constant() ? Affine((lo_.constant() / Rational(k)).floor())
                                : (lo_ - Affine(k - 1)) / Rational(k);
  Affine hi =
      hi_.is_constant() ? Affine((hi_.constant() / Rational(k)).floor()) : hi_ / Rational(k);
  return Interval(lo, hi);
}

Interval Interval::mod(int64_t k) const {
  PLANNER_CHECK(k > 0, "mod by {}", k);
  if (is_concrete() && !is_empty() && Rational(0) <= lo_.constant()) {
    int64_t lo = lo_.constant().floor(), hi = hi_.constant().floor();
    if (lo / k == hi / k) return Interval(Affine(lo % k), Affine(hi % k));
  }
  return Interval(Affine(0), Affine(k - 1));
}

std::optional<std::pair<int64_t, int64_t>> Interval::evaluate(
    const std::map<std::string, int64_t>& sizes) const {
  Interval i = substitute(sizes);
  if (!i.is_concrete()) return std::nullopt;
  return std::make_pair(i.lo().constant().floor(), i.hi().constant().ceil());
}

std::string Interval::to_string() const {
  return fmt::format("[{}, {}]", lo_.to_string(), hi_.to_string());
}
std::string Interval::to_range_string() const {
  return fmt::format("{}..{}", lo_.to_string(), hi_.to_string());
}

Expected<Interval> multiply(const Interval& a, const Interval& b) {
  if (b.is_constant_point()) return a * b.lo().constant();
  if (a.is_constant_point()) return b * a.lo().constant();
  return make_error("product of two intervals {} and {} is not affine", a.to_string(),
                    b.to_string());
}

Interval hull(const Interval& a, const Interval& b, const Interval& fallback) {
  if (a.is_empty()) return b;
  if (b.is_empty()) return a;
  auto lo_le = provably_le(a.lo(), b.lo());
  auto hi_le = provably_le(a.hi(), b.hi());
  Affine lo = lo_le ? (*lo_le ? a.lo() : b.lo()) : fallback.lo();
  Affine hi = hi_le ? (*hi_le ? b.hi() : a.hi()) : fallback.hi();
  return Interval(lo, hi);
}

Interval clip(const Interval& a, const Interval& bounds) {
  Affine lo = provably_le(a.lo(), bounds.lo()).value_or(false) ? bounds.lo() : a.lo();
  Affine hi = provably_le(bounds.hi(), a.hi()).value_or(false) ? bounds.hi() : a.hi();
  return Interval(lo, hi);
}

bool Region::is_empty() const {
  for (const auto& d : dims)
    if (d.is_empty()) return true;
  return false;
}

std::optional<std::vector<std::pair<int64_t, int64_t>>> Region::evaluate(
    const std::map<std::string, int64_t>& sizes) const {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& d : dims) {
    auto v = d.evaluate(sizes);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::string Region::to_string() const {
  if (is_empty()) return "empty";
  std::vector<std::string> parts;
  for (const auto& d : dims) parts.push_back(d.to_range_string());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

}  // namespace planner::analysis
