// Helpers the fuzz harnesses share: the properties every parser's result must have.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "support/expected.h"

namespace planner::fuzz {

/// Aborts with `what` (a broken property: libFuzzer then saves the input as a crash).
[[noreturn]] inline void fail(std::string_view what) {
  std::fprintf(stderr, "fuzz property violated: %.*s\n", static_cast<int>(what.size()),
               what.data());
  std::abort();
}

/// A user's bad input must reach them as a message naming the input: not empty, starting with
/// `source`. (An exception escaping a parser needs no check: it ends the run as a crash.)
inline void check_error(const Error& error, std::string_view source) {
  const std::string& m = error.message();
  if (m.empty()) fail("empty error message");
  if (m.rfind(source, 0) != 0) fail("error message does not start with the input's name: " + m);
}

}  // namespace planner::fuzz
