// Located diagnostics for TDL sources.
#include "tdl/source.h"

#include <fmt/format.h>

namespace planner::tdl {

std::string_view source_line(std::string_view text, int line) {
  if (line < 1) return {};
  size_t start = 0;
  for (int l = 1; l < line; ++l) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  std::string_view result =
      text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
  if (!result.empty() && result.back() == '\r') result.remove_suffix(1);
  return result;
}

std::string format_diagnostic(const Source& source, SourceLoc loc, std::string_view message) {
  if (!loc.known()) return fmt::format("{}: error: {}", source.name, message);
  std::string out = fmt::format("{}:{}:{}: error: {}", source.name, loc.line, loc.col, message);
  std::string_view line = source_line(source.text, loc.line);
  out += "\n";
  out += line;
  out += "\n";
  // Keep tabs in the caret's indentation so the caret lines up however tabs are rendered.
  for (int i = 0; i + 1 < loc.col; ++i) {
    out +=
        (static_cast<size_t>(i) < line.size() && line[static_cast<size_t>(i)] == '\t') ? '\t' : ' ';
  }
  out += "^";
  return out;
}

Error located_error(const Source& source, SourceLoc loc, std::string_view message) {
  return Error(format_diagnostic(source, loc, message));
}

}  // namespace planner::tdl
