// Writing a compiled plan to a folder: rank_<i>.onnx, manifest.json, programs.txt, the
// launcher sources and a copy of runtime_stub/ — atomically (a temporary folder renamed into
// place), so a failure never leaves a half-written folder, and never over a user's folder.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/program.h"
#include "codegen/program_simulation.h"
#include "support/expected.h"
#include "support/output_file.h"

namespace planner::codegen {

/// Options of compile_to_directory.
struct CompileOptions {
  std::string backend = "cpu";  ///< the launcher's default PLANNER_RT_BACKEND: cpu or cuda
  std::string model_name;       ///< for the ONNX graph names and the manifest
  int64_t opset = 17;           ///< the default-domain opset of the rank models
  /// The runtime_stub/ source folder copied next to the launcher; empty: runtime_stub_dir().
  std::string runtime_stub;
  /// The compiled step simulated (program_simulation.h): written into manifest.json as
  /// `predicted`, per rank and in total; absent when null.
  const ProgramCost* predicted = nullptr;
  /// Write rank_<i>.onnx; verify, which builds and runs only the launchers, leaves them out
  /// where the constants pass 64 MiB (a model with its weights would write them whole once
  /// per rank).
  bool rank_models = true;
};

/// Where the runtime library's sources are: $PLANNER_RUNTIME_STUB_DIR, else the source tree the
/// planner was built from.
std::string runtime_stub_dir();

/// What a compile output folder is for the output guard (support/output_file.h): it holds a
/// `.planner-compile` marker file, and only a folder with that marker (or an empty one) is
/// replaced by the next compile. Missing parent folders are created.
const OutputFolderKind& compile_folder_kind();

/// Writes every file of `programs` into `dir` with write_folder_atomically (replacing an
/// existing folder only once the new one is complete, and only an earlier compile output or an
/// empty folder). Errors: a rank model the ONNX checker refuses, a file that cannot be written,
/// a missing runtime_stub, a `dir` that holds anything else.
Expected<void> compile_to_directory(const Programs& programs, const CompileOptions& options,
                                    const std::string& dir);

}  // namespace planner::codegen
