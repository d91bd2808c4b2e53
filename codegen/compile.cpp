// Writing a compiled plan's files atomically.
#include "codegen/compile.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "codegen/launcher.h"
#include "codegen/onnx_export.h"

namespace planner::codegen {

namespace fs = std::filesystem;

std::string runtime_stub_dir() {
  if (const char* env = std::getenv("PLANNER_RUNTIME_STUB_DIR"); env && *env) return env;
  return PLANNER_RUNTIME_STUB_SOURCE;
}

namespace {

Expected<void> write_file(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error("{}: cannot write", path.string());
  out << text;
  if (!out.flush()) return make_error("{}: write failed", path.string());
  return ok();
}

Expected<void> write_all(const Programs& p, const CompileOptions& o, const fs::path& dir) {
  for (int r = 0; r < p.num_ranks; ++r) {
    PLANNER_TRY_ASSIGN(std::string bytes, rank_onnx(p, r, o.opset, o.model_name));
    PLANNER_TRY(write_file(dir / fmt::format("rank_{}.onnx", r), bytes));
  }
  PLANNER_TRY(write_file(dir / "manifest.json", manifest_json(p, o.model_name)));
  PLANNER_TRY(write_file(dir / "programs.txt", p.to_text()));
  LauncherOptions lo;
  lo.backend = o.backend;
  for (const auto& [path, text] : launcher_files(p, lo)) PLANNER_TRY(write_file(dir / path, text));
  fs::path rt = o.runtime_stub.empty() ? fs::path(runtime_stub_dir()) : fs::path(o.runtime_stub);
  if (!fs::exists(rt / "CMakeLists.txt") || !fs::exists(rt / "include/planner_rt/tensor.h"))
    return make_error("{}: not the runtime_stub source folder (set PLANNER_RUNTIME_STUB_DIR)", rt.string());
  std::error_code ec;
  fs::create_directories(dir / "runtime_stub", ec);
  for (const char* part : {"CMakeLists.txt", "include", "src"}) {
    fs::copy(rt / part, dir / "runtime_stub" / part, fs::copy_options::recursive, ec);
    if (ec) return make_error("{}: cannot copy {}: {}", (dir / "runtime_stub").string(), part, ec.message());
  }
  return ok();
}

}  // namespace

Expected<void> compile_to_directory(const Programs& p, const CompileOptions& o, const std::string& dir_text) {
  fs::path dir = fs::absolute(fs::path(dir_text)).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  fs::path tmp = dir.parent_path() / fmt::format(".{}.tmp-{}", dir.filename().string(), ::getpid());
  fs::remove_all(tmp, ec);
  auto written = write_all(p, o, tmp);
  if (!written) {
    fs::remove_all(tmp, ec);
    return written.error();
  }
  fs::path old = dir.parent_path() / fmt::format(".{}.old-{}", dir.filename().string(), ::getpid());
  bool had = fs::exists(dir);
  if (had) {
    fs::rename(dir, old, ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      return make_error("{}: cannot replace: {}", dir.string(), ec.message());
    }
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    std::string why = ec.message();
    if (had) fs::rename(old, dir, ec);
    fs::remove_all(tmp, ec);
    return make_error("{}: cannot write: {}", dir.string(), why);
  }
  if (had) fs::remove_all(old, ec);
  return ok();
}

}  // namespace planner::codegen
