// Tests for codegen/launcher: the string-literal escaping every name goes through.
#include "codegen/launcher.h"

#include <string>

#include "tests/test_util.h"

namespace planner::codegen {
namespace {

// Decodes a C++ string literal as the compiler would (the escapes cpp_string_literal emits).
std::string decode(const std::string& literal) {
  REQUIRE(literal.size() >= 2);
  REQUIRE(literal.front() == '"');
  REQUIRE(literal.back() == '"');
  std::string out;
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    char c = literal[i];
    REQUIRE(c != '"');
    if (c != '\\') {
      out += c;
      continue;
    }
    char n = literal[++i];
    if (n >= '0' && n <= '7') {
      int v = 0;
      for (int k = 0; k < 3; ++k) v = v * 8 + (literal[i + static_cast<size_t>(k)] - '0');
      i += 2;
      out += static_cast<char>(v);
    } else {
      out += n;
    }
  }
  return out;
}

void check_round_trip(const std::string& text) {
  std::string lit = cpp_string_literal(text);
  INFO("text: ", text, " literal: ", lit);
  CHECK(decode(lit) == text);
  // Nothing that a compiler would read before the string: no raw newlines, no trigraphs, only
  // printable ASCII.
  for (size_t i = 0; i < lit.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(lit[i]);
    CHECK(c >= 0x20);
    CHECK(c < 0x7f);
    if (lit[i] == '?') CHECK(lit[i - 1] == '\\');
  }
}

TEST_CASE("cpp_string_literal escapes quotes, backslashes, newlines and trigraphs") {
  check_round_trip("plain_name");
  check_round_trip("a \"quoted\" name");
  check_round_trip("back\\slash\\");
  check_round_trip("line\nbreak\r\ttab");
  check_round_trip("end of comment */ and /* start");
  check_round_trip("trigraph ??/ and ??= and ??'");
  check_round_trip("non-ASCII: \xc3\xa9\xe2\x9c\x93 and \x01\x7f");
  check_round_trip(std::string("nul\0inside", 10));
  check_round_trip("octal follows: \0017");
  CHECK(cpp_string_literal("a?b") == "\"a\\?b\"");
  CHECK(cpp_string_literal("\n1") == "\"\\0121\"");
}

}  // namespace
}  // namespace planner::codegen
