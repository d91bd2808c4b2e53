// Tests for report/svg.cpp: the GPU palette, labels and coordinates.
#include "report/svg.h"

#include <set>

#include <doctest/doctest.h>

namespace planner::report {
namespace {

TEST_CASE("GPU colours: fixed for the first twenty, distinct hues after, all #rrggbb") {
  CHECK(device_colour(0) == "#1f77b4");
  CHECK(device_colour(1) == "#ff7f0e");
  CHECK(device_colour(19) == "#bd9e39");
  std::set<std::string> seen;
  for (int d = 0; d < 256; ++d) {
    const std::string c = device_colour(d);
    CHECK_MESSAGE(c.size() == 7, c);
    CHECK(c[0] == '#');
    CHECK(c.find_first_not_of("0123456789abcdef", 1) == std::string::npos);
    CHECK_MESSAGE(seen.insert(c).second, "GPU " << d << " repeats " << c);
    CHECK(device_colour(d) == c);  // the same every time
  }
}

TEST_CASE("text on a colour: black on light, white on dark") {
  CHECK(text_colour_on("#ffffff") == "black");
  CHECK(text_colour_on("#000000") == "white");
  CHECK(text_colour_on("#1f77b4") == "white");
  CHECK(text_colour_on("#bcbd22") == "black");
}

TEST_CASE("labels: one line, shortened by characters, escaped") {
  CHECK(svg_label("fc1.weight", 20) == "fc1.weight");
  CHECK(svg_label("abcdef", 4) == "abc\u2026");
  CHECK(svg_label("\u00e9\u00e9\u00e9\u00e9\u00e9", 3) ==
        "\u00e9\u00e9\u2026");  // code points, not bytes
  CHECK(svg_label("a\nb\tc", 10) == "a b c");
  CHECK(svg_label("<x & \"y\">", 20) == "&lt;x &amp; &quot;y&quot;&gt;");
  CHECK(svg_label("ab\xff", 10) == "ab\xEF\xBF\xBD");
}

TEST_CASE("coordinates: one decimal, no trailing .0") {
  CHECK(num(12.0) == "12");
  CHECK(num(12.5) == "12.5");
  CHECK(num(0.04) == "0");
  CHECK(num(-0.04) == "0");
  CHECK(num(-3.26) == "-3.3");
}

}  // namespace
}  // namespace planner::report
