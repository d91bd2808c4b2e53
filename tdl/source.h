// Source text, positions in it and located diagnostics (`file:line:col: error: ...` + caret).
//
// API: a Source holds one file's name and text; a SourceLoc is a 1-based line and column in it.
// `located_error(source, loc, message)` builds a planner::Error whose message is the full
// multi-line diagnostic: the first line is the one-line summary, then the source line and a
// caret under the fault (ninja's Lexer::Error style).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "support/expected.h"

namespace planner::tdl {

/// One TDL source file: its name as shown in diagnostics and its full text.
struct Source {
  std::string name;  ///< e.g. "ops/conv.tdl" or "<inline>"
  std::string text;
};

/// A position in a Source: 1-based line and column (columns count bytes). {0, 0} is unknown.
struct SourceLoc {
  int line = 0;
  int col = 0;
  bool known() const { return line > 0; }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

/// The text of line `line` (1-based) of `text`, without its newline; empty when out of range.
std::string_view source_line(std::string_view text, int line);

/// Formats `name:line:col: error: message`, then the source line and a caret under `loc`.
/// When `loc` is unknown only `name: error: message` is produced.
std::string format_diagnostic(const Source& source, SourceLoc loc, std::string_view message);

/// A planner::Error carrying format_diagnostic(source, loc, message).
Error located_error(const Source& source, SourceLoc loc, std::string_view message);

}  // namespace planner::tdl
