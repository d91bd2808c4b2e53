// Text helpers: edit distance, file reading, line and column.
#include "support/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

namespace planner {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates,
                          size_t max_distance) {
  std::string best;
  size_t best_distance = max_distance + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  return best;
}

Expected<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return make_error("{}: is a directory", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("{}: cannot open file", path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error("{}: read error", path);
  return text.str();
}

std::pair<size_t, size_t> line_column(std::string_view text, size_t offset) {
  size_t end = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n')
      line += 1, column = 1;
    else
      ++column;
  }
  return {line, column};
}

}  // namespace planner
