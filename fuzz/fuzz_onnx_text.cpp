// Fuzz target: ONNX's textual syntax (.onnxtxt) through importers::import_model_text: ONNX's
// text parser, shape inference, the importer's own rules, constant folding and op statistics.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "importers/onnx_import.h"
#include "ir/op_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A folder that does not exist: external data can never be found.
  const std::string source = "/nonexistent/planner-fuzz/model.onnxtxt";
  std::string text(reinterpret_cast<const char*>(data), size);
  auto graph = planner::importers::import_model_text(text, source);
  if (!graph) {
    planner::fuzz::check_error(graph.error(), source);
    return 0;
  }
  (void)planner::ir::graph_stats(*graph);
  return 0;
}
