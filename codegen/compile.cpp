// Writing a compiled plan's files atomically, into a folder marked as compile output.
#include "codegen/compile.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "codegen/launcher.h"
#include "codegen/onnx_export.h"
#include "support/output_file.h"

namespace planner::codegen {

namespace fs = std::filesystem;

std::string runtime_stub_dir() {
  if (const char* env = std::getenv("PLANNER_RUNTIME_STUB_DIR"); env && *env) return env;
  return PLANNER_RUNTIME_STUB_SOURCE;
}

namespace {

Expected<void> write_all(const Programs& p, const CompileOptions& o, const fs::path& dir) {
  for (int r = 0; r < p.num_ranks && o.rank_models; ++r) {
    PLANNER_TRY_ASSIGN(std::string bytes, rank_onnx(p, r, o.opset, o.model_name));
    PLANNER_TRY(write_new_file(dir / fmt::format("rank_{}.onnx", r), bytes));
  }
  PLANNER_TRY(write_new_file(dir / "manifest.json",
                             manifest_json(p, o.model_name, o.predicted, o.backend)));
  PLANNER_TRY(write_new_file(dir / "programs.txt", p.to_text()));
  LauncherOptions lo;
  lo.backend = o.backend;
  for (const auto& [path, text] : launcher_files(p, lo))
    PLANNER_TRY(write_new_file(dir / path, text));
  fs::path rt = o.runtime_stub.empty() ? fs::path(runtime_stub_dir()) : fs::path(o.runtime_stub);
  if (!fs::exists(rt / "CMakeLists.txt") || !fs::exists(rt / "include/planner_rt/tensor.h"))
    return make_error("{}: not the runtime_stub source folder (set PLANNER_RUNTIME_STUB_DIR)",
                      rt.string());
  std::error_code ec;
  fs::create_directories(dir / "runtime_stub", ec);
  for (const char* part : {"CMakeLists.txt", "include", "src"}) {
    fs::copy(rt / part, dir / "runtime_stub" / part, fs::copy_options::recursive, ec);
    if (ec) return make_error("cannot write runtime_stub/{}: {}", part, ec.message());
  }
  return ok();
}

}  // namespace

const OutputFolderKind& compile_folder_kind() {
  static const OutputFolderKind kind{"compile output", ".planner-compile", {}, true};
  return kind;
}

Expected<void> compile_to_directory(const Programs& p, const CompileOptions& o,
                                    const std::string& dir) {
  return write_folder_atomically(
      dir, compile_folder_kind(), [&](const fs::path& fresh) -> Expected<void> {
        auto written = write_all(p, o, fresh);
        // Errors of writing name the folder the user gave, not the temporary one.
        if (!written && written.error().message().rfind("cannot write ", 0) == 0)
          return written.error().with_context(dir);
        return written;
      });
}

}  // namespace planner::codegen
