// Small text helpers every front end needs: "did you mean" suggestions, the line and column of a
// byte offset for located errors, and text made safe for XML and HTML and for terminals.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/expected.h"

namespace planner {

/// Levenshtein distance between two strings.
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `word` within `max_distance` edits (ties: the first), or "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates,
                          size_t max_distance);

/// The 1-based line and column of byte `offset` in `text` (an offset past the end counts as
/// the end).
std::pair<size_t, size_t> line_column(std::string_view text, size_t offset);

/// `text` as valid UTF-8: every byte that does not belong to a well-formed sequence (stray
/// continuation bytes, truncated or overlong sequences, surrogates) becomes U+FFFD.
std::string valid_utf8(std::string_view text);

/// `text` for XML (SVG) and HTML, in element content and in quoted attribute values: valid
/// UTF-8 (as valid_utf8), & < > " ' as entities, tab, newline and carriage return as character
/// references, and the other control characters, which XML 1.0 does not allow, as U+FFFD.
std::string xml_escape(std::string_view text);

/// `text` safe to print on a terminal: control characters (C0, DEL and the C1 range U+0080 to
/// U+009F, which terminals read as escape sequences) and bytes that are not well-formed UTF-8
/// become `\xNN` (one per byte; a backslash stays as it is). With `keep_newlines`, '\n' stays
/// (multi-line diagnostics); otherwise it is escaped too, so a name can never break a line.
/// Used wherever a name from a model, plan or other input file reaches the terminal.
std::string terminal_safe(std::string_view text, bool keep_newlines = false);

}  // namespace planner
