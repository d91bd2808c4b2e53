// Tests for support/text.cpp: edit distance, suggestions, file reading, line and column.
#include "support/text.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

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

TEST_CASE("reading files: contents, missing, directory") {
  auto dir = std::filesystem::temp_directory_path();
  auto path = (dir / "planner_text_test.txt").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "one\ntwo";
  }
  auto text = read_file(path);
  REQUIRE(text.has_value());
  CHECK(*text == "one\ntwo");
  std::remove(path.c_str());
  auto missing = read_file(path);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message() == path + ": cannot open file");
  auto folder = read_file(dir.string());
  REQUIRE_FALSE(folder.has_value());
  CHECK(folder.error().message() == dir.string() + ": is a directory");
}

}  // namespace
}  // namespace planner
