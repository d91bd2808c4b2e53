// A fresh temporary folder for a test, removed with everything in it at the end.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace planner::testing {

/// mkdtemp under the system's temporary folder; removed by the destructor.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "planner-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  /// Writes `text` to `name` under the folder and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::filesystem::path p = path / name;
    std::ofstream out(p, std::ios::binary);
    out << text;
    return p.string();
  }
  /// The names in `dir` (default: the folder itself), sorted, hidden ones included.
  std::vector<std::string> entries(const std::filesystem::path& dir = {}) const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.empty() ? path : dir))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

/// The whole file at `path` ("" when it cannot be opened).
inline std::string contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace planner::testing
