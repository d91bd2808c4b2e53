// Where the model behind a plan is: the path the plan records, or the graph name it records
// looked up next to the plan and in the working folder (cli/plan_lookup.h).
#include "cli/plan_lookup.h"

#include <filesystem>

#include <fmt/format.h>

#include "support/sha256.h"

namespace planner::cli {

std::string model_path_from_plan(const std::string& model_path, const std::string& plan_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path model = fs::absolute(model_path, ec).lexically_normal();
  const fs::path folder = fs::absolute(plan_path, ec).lexically_normal().parent_path();
  const fs::path relative = model.lexically_relative(folder);
  return relative.empty() ? model.generic_string() : relative.generic_string();
}

namespace {

// Whether `candidate` is the plan's model: a regular .onnx or .onnxtxt file of at most 2 GiB
// (what protobuf reads; checked before a byte is hashed) with the plan's SHA-256.
bool is_plan_model(const search::Plan& plan, const std::filesystem::path& candidate) {
  const std::string ext = candidate.extension().string();
  if (ext != ".onnx" && ext != ".onnxtxt") return false;
  auto sha = sha256_file(candidate.string(), kMaxModelFileBytes, "model file");
  return sha && *sha == plan.model.sha256;
}

}  // namespace

Expected<std::string> find_plan_model(const search::Plan& plan, const std::string& plan_path) {
  namespace fs = std::filesystem;
  const fs::path plan_folder = fs::path(plan_path).parent_path();
  if (!plan.model.path.empty() && plan.model.path.find('\0') == std::string::npos) {
    const fs::path recorded = fs::path(plan.model.path).is_absolute()
                                  ? fs::path(plan.model.path)
                                  : plan_folder / plan.model.path;
    if (is_plan_model(plan, recorded)) return recorded.lexically_normal().string();
  }
  std::vector<fs::path> folders = {plan_folder, fs::path(".")};
  if (folders[0].empty()) folders.erase(folders.begin());
  // The graph name is data from the file: only a plain file name is looked up, in those two
  // folders.
  const std::string& name = plan.model.name;
  const bool plain = !name.empty() && name.find('/') == std::string::npos &&
                     name.find('\0') == std::string::npos && name != "." && name != "..";
  for (const fs::path& dir : folders)
    for (const char* ext : {".onnx", ".onnxtxt"}) {
      if (!plain) break;
      const fs::path candidate = dir / (name + ext);
      if (is_plan_model(plan, candidate)) return candidate.string();
    }
  const std::string where =
      plan.model.path.empty()
          ? std::string("neither next to the plan nor in the working folder")
          : fmt::format(
                "not at {} (the path it records), nor next to the plan or in the working "
                "folder",
                plan.model.path);
  return make_error(
      "{}: the plan's model '{}' (sha256 {}) is {} as {}.onnx or {}.onnxtxt; name it "
      "with --model",
      plan_path, name, plan.model.sha256.substr(0, 12), where, name, name);
}

Expected<search::Plan> load_plan_and_model(const std::string& plan_path, std::string& model_path) {
  PLANNER_TRY_ASSIGN(search::Plan plan, search::load_plan(plan_path));
  if (model_path.empty()) {
    PLANNER_TRY_ASSIGN(model_path, find_plan_model(plan, plan_path));
  }
  return plan;
}

}  // namespace planner::cli
