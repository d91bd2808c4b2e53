// Fuzz target: plan JSON through search::parse_plan, with a round-trip property: a plan that
// parses is written (plan_to_json) and parsed again, and both the plan and the text must be
// the same the second time. A plan that parses then has its options read back as compile,
// verify and explain read them (cli::apply_plan_options): accepted, or one error naming the
// plan file; an accepted one gives counts the plan's GPUs hold. Then the plan's model is looked
// up as explain and compile do without --model (cli::find_plan_model), from a plan file in a
// scratch folder that holds the model, a FIFO, a symbolic link to /dev/zero and a sparse file
// past the 2 GiB bound: the lookup ends (no read of an endless or blocking file), and a found
// model is a regular .onnx or .onnxtxt file with the plan's SHA-256, taken from the path the
// plan records or, by the graph name, from the plan's folder or the working folder only.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "cli/plan_lookup.h"
#include "cli/plan_options.h"
#include "fuzz/fuzz_util.h"
#include "search/plan.h"
#include "support/sha256.h"

namespace {

namespace fs = std::filesystem;

// The scratch folder, made once per process: models/model.onnxtxt (the model of
// fuzz/corpus/plan/lookup.json), plans/ (where the plan file is said to be) holding a copy as
// model.onnx, a FIFO, a link to /dev/zero and a 3 GiB sparse file, each named like a model.
const fs::path& scratch() {
  static const fs::path root = [] {
    fs::path r = fs::temp_directory_path() / ("planner-fuzz-lookup-" + std::to_string(getuid()));
    fs::create_directories(r / "models");
    fs::create_directories(r / "plans");
    for (const fs::path& p : {r / "models" / "model.onnxtxt", r / "plans" / "model.onnx"})
      std::ofstream(p, std::ios::binary | std::ios::trunc) << "fuzz lookup model\n";
    std::error_code ec;
    fs::remove(r / "plans" / "fifo.onnx", ec);
    mkfifo((r / "plans" / "fifo.onnx").c_str(), 0600);
    fs::remove(r / "plans" / "zero.onnx", ec);
    fs::create_symlink("/dev/zero", r / "plans" / "zero.onnx", ec);
    std::ofstream(r / "plans" / "big.onnxtxt", std::ios::binary | std::ios::trunc);
    fs::resize_file(r / "plans" / "big.onnxtxt", std::uintmax_t{3} << 30, ec);
    return r;
  }();
  return root;
}

void check_lookup(const planner::search::Plan& plan) {
  const fs::path plan_path = scratch() / "plans" / "fuzz-plan.json";
  auto found = planner::cli::find_plan_model(plan, plan_path.string());
  if (!found) {
    planner::fuzz::check_error(found.error(), plan_path.string());
    return;
  }
  const fs::path model(*found);
  const std::string ext = model.extension().string();
  std::error_code ec;
  if ((ext != ".onnx" && ext != ".onnxtxt") || !fs::is_regular_file(model, ec))
    planner::fuzz::fail("the lookup found something not a .onnx or .onnxtxt file: " + *found);
  auto sha = planner::sha256_file(*found, planner::kMaxModelFileBytes);
  if (!sha || *sha != plan.model.sha256)
    planner::fuzz::fail("the lookup found a file without the plan's SHA-256: " + *found);
  // Found by the graph name: only in the plan's folder or the working folder.
  const fs::path recorded = fs::path(plan.model.path).is_absolute()
                                ? fs::path(plan.model.path)
                                : plan_path.parent_path() / plan.model.path;
  const bool by_path = !plan.model.path.empty() &&
                       plan.model.path.find('\0') == std::string::npos &&
                       model == recorded.lexically_normal();
  const fs::path folder = model.parent_path();
  if (!by_path && folder != plan_path.parent_path() && folder != fs::path("."))
    planner::fuzz::fail("the lookup by name left the plan's and the working folder: " + *found);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace se = planner::search;
  const std::string source = "fuzz-plan.json";
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto plan = se::parse_plan(text, source);
  if (!plan) {
    planner::fuzz::check_error(plan.error(), source);
    return 0;
  }
  std::string written = se::plan_to_json(*plan);
  auto again = se::parse_plan(written, "round-trip.json");
  if (!again) planner::fuzz::fail("a written plan does not parse: " + again.error().message());
  if (!(*again == *plan)) planner::fuzz::fail("plan round trip gives a different plan");
  if (se::plan_to_json(*again) != written) planner::fuzz::fail("plan text is not a fixed point");

  check_lookup(*plan);

  planner::cli::PipelineFlags flags;
  auto applied = planner::cli::apply_plan_options(*plan, source, flags);
  if (!applied) {
    planner::fuzz::check_error(applied.error(), source);
    return 0;
  }
  const int n = plan->topology.num_devices;
  const int replicas = flags.pinned_replicas();
  if (flags.micro_batches < 1 || flags.pipeline_stages < 1 || replicas < 0)
    planner::fuzz::fail("plan options accepted with a count below 1");
  if (n > 0 &&
      (n % std::max(1, replicas) != 0 || (n / std::max(1, replicas)) % flags.pipeline_stages != 0))
    planner::fuzz::fail("plan options accepted that do not divide the plan's GPUs");
  return 0;
}
