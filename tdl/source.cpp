// Located diagnostics for TDL sources.
#include "tdl/source.h"

#include <algorithm>

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
  // A very long line (generated or hostile) is shown as a window around the column.
  constexpr size_t kWindow = 60;
  size_t col = loc.col > 0 ? static_cast<size_t>(loc.col - 1) : 0;
  std::string prefix;
  if (line.size() > 2 * kWindow + 20) {
    size_t start = col > kWindow ? col - kWindow : 0;
    size_t end = std::min(line.size(), col + kWindow);
    if (start > 0) prefix = "...";
    std::string_view shown = line.substr(start, end - start);
    std::string suffix = end < line.size() ? "..." : "";
    line = shown;
    col = col - start + prefix.size();
    out += "\n" + prefix + std::string(line) + suffix + "\n";
  } else {
    out += "\n";
    out += line;
    out += "\n";
  }
  // Keep tabs in the caret's indentation so the caret lines up however tabs are rendered.
  for (size_t i = 0; i < col; ++i) {
    size_t in_line = i - std::min(i, prefix.size());
    bool tab = i >= prefix.size() && in_line < line.size() && line[in_line] == '\t';
    out += tab ? '\t' : ' ';
  }
  out += "^";
  return out;
}

Error located_error(const Source& source, SourceLoc loc, std::string_view message) {
  return Error(format_diagnostic(source, loc, message));
}

}  // namespace planner::tdl
