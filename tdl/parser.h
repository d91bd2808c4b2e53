// The TDL parser: source text to a checked syntax tree (tdl/ast.h).
//
// API: `parse_file(text, source_name)` tokenizes, parses the grammar of docs/tdl.md and runs
// the semantic checks of tdl/check.h. On failure it returns a planner::Error whose message is
// the full located diagnostic: `name:line:col: error: summary`, the source line, a caret.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "support/expected.h"
#include "tdl/ast.h"

namespace planner::tdl {

/// The largest TDL text parse_file accepts, in bytes; a larger one is an error at once.
inline constexpr size_t kMaxSourceBytes = size_t{1} << 20;

/// Parses and checks one TDL file. `source_name` is used in diagnostics.
Expected<File> parse_file(std::string_view text, std::string source_name);

/// Parses without the semantic checks (for tools that want the raw tree of a bad file).
Expected<File> parse_file_unchecked(std::string_view text, std::string source_name);

}  // namespace planner::tdl
