// Fuzz target: ONNX protobuf models through importers::import_model, the entry point the
// command line uses (the bytes go to a file in a private temporary folder, so that the file
// checks, the protobuf parser, shape inference, constant folding and op statistics all run).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz/fuzz_util.h"
#include "importers/onnx_import.h"
#include "ir/op_stats.h"

namespace {

// The model's folder holds nothing else, so external-data references can only find the model.
const std::string& model_path() {
  static const std::string path = [] {
    // $TMPDIR when set: scripts/fuzz.sh points it into build-fuzz/, so that the folders of
    // runs that crash (and never reach atexit) do not pile up in /tmp.
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/planner_fuzz_onnx_XXXXXX";
    if (!::mkdtemp(pattern.data())) planner::fuzz::fail("cannot make a temporary folder");
    static std::string folder = pattern;
    std::atexit([] { std::filesystem::remove_all(folder); });
    return folder + "/model.onnx";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = model_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) planner::fuzz::fail("cannot write the model file");
  if (size > 0 && std::fwrite(data, 1, size, f) != size) planner::fuzz::fail("short write");
  std::fclose(f);
  auto graph = planner::importers::import_model(path);
  if (!graph) {
    planner::fuzz::check_error(graph.error(), path);
    return 0;
  }
  (void)planner::ir::graph_stats(*graph);
  return 0;
}
