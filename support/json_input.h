// The one reader of users' JSON files (topologies, plans, costs): a checked file read (see
// input_file.h), a bound on nesting depth and on number range found by a scan before parsing,
// and every nlohmann exception turned into one line naming the file and the line and column.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "support/expected.h"

namespace planner {

/// Arrays and objects nested deeper than this are refused (no planner file needs more than a
/// few levels; nlohmann renders values recursively, so an unbounded depth overflows the stack).
inline constexpr int kMaxJsonDepth = 128;

/// Parses `text` as JSON. Errors are "SOURCE:LINE:COL: invalid JSON: ...": a syntax error,
/// nesting deeper than kMaxJsonDepth, or a number outside the range of a double (1e400).
Expected<nlohmann::ordered_json> parse_json(std::string_view text, const std::string& source);

/// read_file(path, what) then parse_json.
Expected<nlohmann::ordered_json> read_json_file(const std::string& path, std::string_view what);

/// nlohmann's message without its "[json.exception.type_error.302] " prefix.
std::string json_error_detail(const nlohmann::ordered_json::exception& e);

/// Runs `read` (which interprets parsed JSON and returns an Expected) and turns an nlohmann
/// exception escaping it (a get<> on the wrong type the reader did not check first) into
/// "SOURCE: ..." rather than an internal error.
template <typename F>
auto with_json_errors(const std::string& source, F&& read) -> decltype(read()) {
  try {
    return std::forward<F>(read)();
  } catch (const nlohmann::ordered_json::exception& e) {
    return make_error("{}: {}", source, json_error_detail(e));
  }
}

}  // namespace planner
