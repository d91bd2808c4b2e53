// Parsing users' JSON with bounded depth and number range.
#include "support/json_input.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "support/input_file.h"
#include "support/text.h"

namespace planner {
namespace {

struct ScanProblem {
  size_t offset;
  std::string what;
};

bool number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// One pass over the text outside strings: the nesting depth and the numbers nlohmann would
// refuse after parsing them (out_of_range.406, which carries no position). Syntax errors are
// left to the parser, which reports them with a position.
std::optional<ScanProblem> scan(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return ScanProblem{i, fmt::format("nested deeper than {} levels", kMaxJsonDepth)};
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = i;
      while (end < text.size() && number_char(text[end])) ++end;
      const std::string token(text.substr(i, end - i));
      errno = 0;
      const double value = std::strtod(token.c_str(), nullptr);
      if (std::isinf(value)) {
        std::string shown = token.size() > 24 ? token.substr(0, 21) + "..." : token;
        return ScanProblem{i, fmt::format("number {} is out of range", shown)};
      }
      i = end - 1;
    }
  }
  return std::nullopt;
}

Error located(std::string_view text, const std::string& source, size_t offset,
              const std::string& what) {
  auto [line, column] = line_column(text, offset);
  return make_error("{}:{}:{}: invalid JSON: {}", source, line, column, what);
}

}  // namespace

std::string json_error_detail(const nlohmann::ordered_json::exception& e) {
  std::string what = e.what();
  if (what.rfind("[json.exception.", 0) == 0) {
    size_t close = what.find("] ");
    if (close != std::string::npos) what = what.substr(close + 2);
  }
  return what;
}

Expected<nlohmann::ordered_json> parse_json(std::string_view text, const std::string& source) {
  if (auto problem = scan(text)) return located(text, source, problem->offset, problem->what);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    // nlohmann reports a byte offset; turn it into the line and column an editor shows.
    std::string what = e.what();
    auto colon = what.find(": ", what.find("parse error"));
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    return located(text, source, e.byte == 0 ? 0 : e.byte - 1, detail);
  } catch (const nlohmann::ordered_json::exception& e) {
    return make_error("{}: invalid JSON: {}", source, json_error_detail(e));
  }
}

Expected<nlohmann::ordered_json> read_json_file(const std::string& path, std::string_view what) {
  PLANNER_TRY_ASSIGN(std::string text, read_file(path, what));
  return parse_json(text, path);
}

}  // namespace planner
