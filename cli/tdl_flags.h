// The --tdl FILE option shared by the commands that use operator descriptions.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "support/expected.h"
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

}  // namespace planner::cli
