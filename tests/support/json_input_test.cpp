// Tests for support/json_input.cpp: the one reader of users' JSON, with bounded depth, bounded
// numbers, and every nlohmann exception as one located line.
#include "support/json_input.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <doctest/doctest.h>

#include "tests/support/temp_dir.h"

namespace planner {
namespace {

using testing::TempDir;

std::string error_of(std::string_view text) {
  auto j = parse_json(text, "t.json");
  REQUIRE_FALSE(j.has_value());
  return j.error().message();
}

TEST_CASE("parse_json: valid JSON, and syntax errors with line and column") {
  auto j = parse_json("{\"a\": [1, 2.5, \"x\"]}", "t.json");
  REQUIRE(j.has_value());
  CHECK((*j)["a"][1].get<double>() == 2.5);
  CHECK(
      error_of("{\n  \"a\": ]\n}") ==
      "t.json:2:8: invalid JSON: syntax error while parsing value - unexpected ']'; expected '[', "
      "'{', or a literal");
}

TEST_CASE("parse_json: nesting is bounded, and deep input gives one line instead of a crash") {
  // 65,536 levels crashed the planner (the message rendered the value recursively).
  const std::string deep(65536, '[');
  CHECK(error_of(deep) == "t.json:1:129: invalid JSON: nested deeper than 128 levels");
  CHECK(error_of("{\"a\":" + std::string(200, '[')) ==
        "t.json:1:133: invalid JSON: nested deeper than 128 levels");
  // At the bound it parses; brackets inside strings do not count.
  const std::string at_bound = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  CHECK(parse_json(at_bound, "t.json").has_value());
  const std::string in_string =
      "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  CHECK(parse_json(in_string, "t.json").has_value());
}

TEST_CASE("parse_json: numbers outside a double's range are user errors with a position") {
  // nlohmann throws out_of_range.406, which reached users as "error: internal".
  CHECK(error_of("{\"bandwidth\":\n  1e400}") ==
        "t.json:2:3: invalid JSON: number 1e400 is out of range");
  CHECK(error_of("[-1e400]") == "t.json:1:2: invalid JSON: number -1e400 is out of range");
  CHECK(error_of("[" + std::string(400, '9') + "]") ==
        "t.json:1:2: invalid JSON: number 999999999999999999999... is out of range");
  auto tiny = parse_json("[1e-400, 12345678901234567890123]", "t.json");  // underflow is zero
  REQUIRE(tiny.has_value());
  CHECK((*tiny)[0].get<double>() == 0.0);
}

TEST_CASE("with_json_errors: a type error escaping a reader names the file") {
  auto j = parse_json("{\"name\": 3}", "t.json");
  REQUIRE(j.has_value());
  auto r = with_json_errors(
      "t.json", [&]() -> Expected<std::string> { return (*j)["name"].get<std::string>(); });
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message() == "t.json: type must be string, but is number");
}

TEST_CASE("read_json_file: the file checks come first") {
  TempDir tmp;
  const std::string fifo = (tmp.path / "topo.json").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(read_json_file(fifo, "topology file").error().message() ==
        fifo + ": is a FIFO, not a regular file");
  const std::string good = tmp.write("good.json", "{\"a\": 1}");
  CHECK(read_json_file(good, "topology file").value()["a"] == 1);
  const std::string bad = tmp.write("bad.json", "[1e999]");
  CHECK(read_json_file(bad, "topology file").error().message() ==
        bad + ":1:2: invalid JSON: number 1e999 is out of range");
}

}  // namespace
}  // namespace planner
