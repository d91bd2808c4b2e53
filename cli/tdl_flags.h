// The --tdl FILE option shared by the commands that use operator descriptions.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "support/expected.h"
#include "support/text.h"
#include "tdl/library.h"

namespace planner::cli {

/// --tdl FILE (repeatable): users' operator descriptions, added over the shipped library.
struct TdlFlags {
  std::vector<std::string> files;

  /// Adds the --tdl option to `app`.
  void add_to(CLI::App& app) {
    app.add_option("--tdl", files,
                   "file of operator descriptions (TDL) that add to or override the shipped ones "
                   "(repeatable)");
  }
  /// The shipped library plus the files; a bad file is a located error.
  Expected<tdl::Library> load() const { return tdl::Library::load(files); }
};

/// Prints a library or parse error and returns exit code 1: a located diagnostic
/// (`file:line:col: error: ...`, its line and a caret) as it is, anything else as
/// `error: <message>` like every other command error.
inline int report_tdl_error(const Error& error) {
  const std::string& m = error.message();
  auto first_line = m.substr(0, m.find('\n'));
  if (first_line.find(": error: ") != std::string::npos) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", terminal_safe(m, /*keep_newlines=*/true).c_str());
    return 1;
  }
  std::fprintf(stderr, "error: %s\n", terminal_safe(m).c_str());
  return 1;
}

}  // namespace planner::cli
