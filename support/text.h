// Small text helpers every front end needs: "did you mean" suggestions, the line and column of a
// byte offset for located errors, and text made safe for XML and HTML.
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

}  // namespace planner
