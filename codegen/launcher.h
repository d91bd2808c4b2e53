// The launcher: generated C++ that runs the per-rank programs on the runtime library
// (planner_rt). main.cpp is a fixed interpreter; program.cpp holds the programs as tables of
// integers, doubles, bytes and escaped string literals, so names from the model never appear
// in generated code except inside string literals.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "codegen/program.h"

namespace planner::codegen {

/// A C++ string literal (with the quotes) holding exactly the bytes of `text`: `"` and `\`
/// escaped, `?` escaped (no trigraphs), every byte outside printable ASCII as a 3-digit octal
/// escape (newlines, non-ASCII UTF-8, NUL).
std::string cpp_string_literal(std::string_view text);

/// Options of the generated launcher.
struct LauncherOptions {
  std::string backend = "cpu";  ///< PLANNER_RT_BACKEND default in the generated CMakeLists
};

/// The launcher's files by relative path (launcher/main.cpp, launcher/launcher.h,
/// launcher/program.cpp, launcher/CMakeLists.txt).
std::map<std::string, std::string> launcher_files(const Programs& programs,
                                                  const LauncherOptions& options);

/// Only program.cpp (for golden tests).
std::string launcher_program_source(const Programs& programs);

}  // namespace planner::codegen
