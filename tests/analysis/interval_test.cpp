// Tests for symbolic interval arithmetic (analysis/interval.h).
#include "analysis/interval.h"

#include "tests/test_util.h"

namespace planner::analysis {
namespace {

Affine sym(const char* name) {
  return Affine::symbol(name);
}

TEST_CASE("rationals normalise and round") {
  CHECK(Rational(6, -4).to_string() == "-3/2");
  CHECK(Rational(-3, 2).floor() == -2);
  CHECK(Rational(-3, 2).ceil() == -1);
  CHECK(Rational(7, 2).floor() == 3);
  CHECK((Rational(1, 2) + Rational(1, 3)).to_string() == "5/6");
  CHECK(Rational(1, 3) < Rational(1, 2));
}

TEST_CASE("affine forms print in the order symbols appear") {
  CHECK((sym("X") - sym("DX") + Affine(1)).to_string() == "X - DX + 1");
  CHECK((sym("X") / Rational(2) - Affine(1)).to_string() == "X/2 - 1");
  CHECK((sym("H") * Rational(3, 2)).to_string() == "3*H/2");
  CHECK((-sym("N") + Affine(2)).to_string() == "-N + 2");
  CHECK((sym("X") - sym("X")).to_string() == "0");
  CHECK((sym("X") * Rational(2)).to_string() == "2*X");
  CHECK((sym("X") + sym("Y")).substitute({{"X", 4}}).to_string() == "Y + 4");
}

TEST_CASE("Figure 4: +- constant, x constant, / constant, +- interval") {
  Interval x = Interval::range(sym("X"));
  CHECK(x.to_string() == "[0, X - 1]");
  CHECK((x + Interval::point(Affine(2))).to_string() == "[2, X + 1]");
  CHECK((x * Rational(3)).to_string() == "[0, 3*X - 3]");
  CHECK((x * Rational(-1)).to_string() == "[-X + 1, 0]");
  CHECK((x - Interval::range(sym("DX"))).to_string() == "[-DX + 1, X - 1]");
  CHECK((x + Interval::range(sym("DX"))).to_string() == "[0, X + DX - 2]");
  CHECK(x.floor_div(2).to_string() == "[0, X/2 - 1/2]");
  CHECK(Interval(Affine(3), Affine(9)).floor_div(4).to_string() == "[0, 2]");
  CHECK(Interval(Affine(-3), Affine(9)).floor_div(4).to_string() == "[-1, 2]");
}

TEST_CASE("Tofu's half intervals, symbolic and concrete") {
  auto h = Interval::range(sym("X")).halves();
  CHECK(h[0].to_string() == "[0, X/2 - 1]");
  CHECK(h[1].to_string() == "[X/2, X - 1]");
  auto odd = Interval::range(Affine(7)).halves();
  CHECK(odd[0].to_string() == "[0, 3]");
  CHECK(odd[1].to_string() == "[4, 6]");
  auto one = Interval::range(Affine(1)).halves();
  CHECK(one[1].is_empty());
}

TEST_CASE("modulo is exact within one period and conservative otherwise") {
  CHECK(Interval(Affine(64), Affine(100)).mod(64).to_string() == "[0, 36]");
  CHECK(Interval(Affine(60), Affine(70)).mod(64).to_string() == "[0, 63]");
  CHECK(Interval::range(sym("X")).mod(8).to_string() == "[0, 7]");
}

TEST_CASE("a product of two intervals is an error unless one is a constant") {
  Interval x = Interval::range(sym("X"));
  auto ok = multiply(x, Interval::point(Affine(4)));
  REQUIRE(ok);
  CHECK(ok->to_string() == "[0, 4*X - 4]");
  auto bad = multiply(x, Interval::range(sym("Y")));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message() ==
        "product of two intervals [0, X - 1] and [0, Y - 1] is not affine");
  auto sized = multiply(x, Interval::point(sym("M")));
  REQUIRE_FALSE(sized);
}

TEST_CASE("comparisons assume sizes of at least 1; hull and clip fall back where undecided") {
  CHECK(provably_le(Affine(0), sym("X") - Affine(1)) == std::optional<bool>(true));
  CHECK(provably_le(sym("X"), Affine(0)) == std::optional<bool>(false));
  CHECK(provably_le(sym("X"), sym("Y")) == std::nullopt);
  Interval whole = Interval::range(sym("X"));
  Interval a(Affine(0), sym("X") / Rational(2));
  Interval b(sym("X") / Rational(2), sym("X") - Affine(1));
  CHECK(hull(a, b, whole).to_string() == "[0, X - 1]");
  Interval c(Affine(2), sym("Y"));
  CHECK(hull(a, c, whole).to_string() == "[0, X - 1]");
  CHECK(clip(Interval(Affine(-1), sym("X")), whole).to_string() == "[0, X - 1]");
  CHECK(clip(Interval(Affine(-1), Affine(7)), Interval::range(Affine(5))).to_string() == "[0, 4]");
  CHECK(hull(Interval(Affine(3), Affine(1)), Interval(Affine(4), Affine(6)), whole).to_string() ==
        "[4, 6]");
}

TEST_CASE("evaluation to concrete integers rounds outwards") {
  auto h = Interval::range(sym("X")).halves();
  CHECK(h[0].evaluate({{"X", 8}}) == std::make_pair(int64_t{0}, int64_t{3}));
  CHECK(h[1].evaluate({{"X", 8}}) == std::make_pair(int64_t{4}, int64_t{7}));
  // X = 7: [0, 2.5] and [3.5, 6] cover index 3 from both sides.
  CHECK(h[0].evaluate({{"X", 7}}) == std::make_pair(int64_t{0}, int64_t{3}));
  CHECK(h[1].evaluate({{"X", 7}}) == std::make_pair(int64_t{3}, int64_t{6}));
  CHECK_FALSE(h[0].evaluate({{"Y", 7}}));
  Region r{{h[0], Interval::range(sym("Y"))}};
  auto v = r.evaluate({{"X", 8}, {"Y", 3}});
  REQUIRE(v);
  CHECK(v->at(1) == std::make_pair(int64_t{0}, int64_t{2}));
  CHECK_FALSE(r.evaluate({{"X", 8}}));
}

TEST_CASE("regions print per dimension") {
  Region r{{Interval(Affine(0), Affine(14)), Interval(Affine(0), Affine(3)),
            Interval(Affine(0), Affine(16))}};
  CHECK(r.to_string() == "[0..14, 0..3, 0..16]");
  CHECK(Region{{Interval(Affine(2), Affine(1))}}.to_string() == "empty");
  CHECK(Region{}.to_string() == "[]");
  CHECK(Region{{Interval::range(sym("X")).halves()[0]}}.to_string() == "[0..X/2 - 1]");
}

}  // namespace
}  // namespace planner::analysis
