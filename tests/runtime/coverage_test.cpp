// Every operator of the shared real models' training graphs (forward, backward, optimizer)
// has a kernel in the runtime, so a launcher for any plan of them can run on the cpu backend.
#include <filesystem>
#include <set>

#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "planner_rt/kernels.h"
#include "rt_test_util.h"

TEST_CASE("the runtime has a kernel for every operator of the shared models' training graphs") {
  const std::filesystem::path dir = std::filesystem::path(PLANNER_SHARED_DIR) / "models";
  if (!std::filesystem::exists(dir / "MANIFEST.md")) {
    MESSAGE("skipped: " << dir.string() << " is absent");
    return;
  }
  const char* models[] = {"alexnet.onnx",      "bert_base.onnx", "gpt2_small.onnx",
                          "inception_v3.onnx", "lstm_lm.onnx",   "lstm_lm_unrolled.onnx",
                          "mlp_8192x4.onnx",   "resnet50.onnx",  "vgg16.onnx"};
  for (const char* m : models) {
    INFO(m);
    auto graph = planner::importers::import_model((dir / m).string());
    if (!graph && graph.error().message().find("not built") != std::string::npos) {
      MESSAGE("skipped: " << graph.error().message());
      return;
    }
    REQUIRE_MESSAGE(graph.has_value(), (graph ? "" : graph.error().message()));
    for (auto opt : {planner::analysis::Optimizer::kSgd, planner::analysis::Optimizer::kMomentum,
                     planner::analysis::Optimizer::kAdam}) {
      planner::analysis::TrainingOptions options;
      options.optimizer = opt;
      auto tg = planner::analysis::build_training_graph(*graph, options, m);
      REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
      std::set<std::string> missing;
      for (planner::ir::OpId id = 0; id < tg->graph.num_ops(); ++id) {
        const auto& op = tg->graph.op(id);
        if (!planner::rt::has_kernel(op.domain, op.op_type))
          missing.insert((op.domain.empty() ? "" : op.domain + ".") + op.op_type);
      }
      std::string list;
      for (const auto& s : missing) list += s + " ";
      INFO("no kernel for: " << list);
      CHECK(missing.empty());
    }
  }
}
