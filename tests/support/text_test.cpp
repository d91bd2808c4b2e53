// Tests for support/text.cpp: edit distance, suggestions, line and column, UTF-8 and XML
// escaping.
#include "support/text.h"

#include <doctest/doctest.h>

namespace planner {
namespace {

TEST_CASE("edit distance and the closest match") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("inspect", "inspct") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(closest_match("topolgy", {"tdl", "topology", "inspect"}, 2) == "topology");
  CHECK(closest_match("zzz", {"tdl", "topology"}, 2) == "");
  CHECK(closest_match("ab", {"ac", "ad"}, 1) == "ac");  // ties: the first
}

TEST_CASE("line and column of a byte offset") {
  CHECK(line_column("abc", 0) == std::pair<size_t, size_t>{1, 1});
  CHECK(line_column("ab\ncd", 4) == std::pair<size_t, size_t>{2, 2});
  CHECK(line_column("ab", 99) == std::pair<size_t, size_t>{1, 3});
}

TEST_CASE("valid UTF-8: well-formed text kept, every bad byte replaced") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(valid_utf8("plain") == "plain");
  CHECK(valid_utf8("caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80") ==
        "caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80");
  CHECK(valid_utf8("a\xFF"
                   "b") == "a" + fffd + "b");                          // never a UTF-8 byte
  CHECK(valid_utf8("a\x80") == "a" + fffd);                            // stray continuation byte
  CHECK(valid_utf8("\xC3") == fffd);                                   // truncated at the end
  CHECK(valid_utf8("\xC0\xAF") == fffd + fffd);                        // overlong '/'
  CHECK(valid_utf8("\xED\xA0\x80") == fffd + fffd + fffd);             // a surrogate
  CHECK(valid_utf8("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // above U+10FFFF
}

TEST_CASE("XML escaping: markup, quotes, line breaks and control characters") {
  CHECK(xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(xml_escape("one\ntwo\tthree\r") == "one&#10;two&#9;three&#13;");
  CHECK(xml_escape(std::string("nul\0bell\a del\x7F", 14)) ==
        "nul\xEF\xBF\xBD"
        "bell\xEF\xBF\xBD del\xEF\xBF\xBD");
  CHECK(xml_escape("\xFF<") == "\xEF\xBF\xBD&lt;");
  CHECK(xml_escape("\xC3\xA9") == "\xC3\xA9");
}

TEST_CASE("terminal-safe text: control characters and broken UTF-8 escaped") {
  CHECK(terminal_safe("layer1/conv") == "layer1/conv");
  CHECK(terminal_safe("\x1b]0;pwned\x07x") == "\\x1b]0;pwned\\x07x");
  CHECK(terminal_safe("\x1b[2J\x1b[31mred") == "\\x1b[2J\\x1b[31mred");
  CHECK(terminal_safe("a\nb\tc\rd") == "a\\x0ab\\x09c\\x0dd");
  CHECK(terminal_safe("a\nb", /*keep_newlines=*/true) == "a\nb");
  CHECK(terminal_safe("a\x7f") == "a\\x7f");
  CHECK(terminal_safe(std::string("nul\0byte", 8)) == "nul\\x00byte");
  CHECK(terminal_safe("\xc2\x9b"
                      "31m") == "\\xc2\\x9b31m");                                  // C1 CSI
  CHECK(terminal_safe("caf\xc3\xa9 \xe2\x86\x92") == "caf\xc3\xa9 \xe2\x86\x92");  // kept
  CHECK(terminal_safe("bad\xff\xfe") == "bad\\xff\\xfe");
  CHECK(terminal_safe("back\\slash") == "back\\slash");
}

}  // namespace
}  // namespace planner
