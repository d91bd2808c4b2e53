// Data parallelism on the training-mode exports (../shared/models/train) moves no activations:
// the lowering's communication bytes equal the all-reduce of every weight gradient plus, per
// training-mode batch norm, the all-reduce of its 2*C statistics, each counted the way the
// communication model counts a collective. Exits 77 (ctest: skipped) without the models.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <filesystem>
#include <iostream>
#include <numeric>

#include "analysis/comm_model.h"
#include "analysis/lowering.h"
#include "analysis/op_strategies.h"
#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "importers/topology.h"
#include "tdl/library.h"

namespace planner::analysis {
namespace {

std::filesystem::path train_dir() {
  return std::filesystem::path(PLANNER_SHARED_DIR) / "models" / "train";
}

struct Bytes {
  double simulated = 0;   // the lowering's comm_bytes
  double gradients = 0;   // all-reduces of the weight gradients
  double statistics = 0;  // all-reduces of the batch-norm statistics
  int batch_norms = 0;
};

Bytes data_parallel_bytes(const std::string& model, int64_t batch, int gpus) {
  importers::ImportOptions io;
  io.batch = batch;
  auto forward = importers::import_model((train_dir() / model).string(), io);
  REQUIRE_MESSAGE(forward.has_value(), (forward ? "" : forward.error().message()));
  auto training = build_training_graph(*forward, TrainingOptions{}, model);
  REQUIRE_MESSAGE(training.has_value(), (training ? "" : training.error().message()));
  const ir::Graph& g = training->graph;
  auto library = tdl::Library::builtin();
  REQUIRE(library.has_value());
  StrategyCache cache(*library);
  auto strategies = analyze_graph(cache, g, model);
  REQUIRE_MESSAGE(strategies.has_value(), (strategies ? "" : strategies.error().message()));
  auto preset = importers::topology_preset("dgx-a100");
  REQUIRE(preset.has_value());
  auto topology = importers::first_devices(*preset, gpus);
  REQUIRE(topology.has_value());
  Lowering lowering(g, *strategies, *topology, LoweringOptions{});
  auto configs = baseline_configs(lowering, Baseline::kDataParallel, gpus);
  REQUIRE(configs.has_value());
  auto lowered = lowering.lower(*configs);
  REQUIRE_MESSAGE(lowered.has_value(), (lowered ? "" : lowered.error().message()));

  std::vector<DeviceId> all(static_cast<size_t>(gpus));
  std::iota(all.begin(), all.end(), 0);
  auto all_reduce = [&](double bytes) {
    return collective_cost(*topology, Collective::kAllReduce, all, bytes).bytes_sent;
  };
  Bytes b;
  b.simulated = lowered->comm_bytes;
  for (ir::TensorId t = 0; t < g.num_tensors(); ++t)
    if (g.tensor(t).role == ir::TensorRole::kParameter &&
        training->grad_of_tensor[static_cast<size_t>(t)] != ir::kNoTensor)
      b.gradients += all_reduce(static_cast<double>(g.tensor(t).num_bytes()));
  for (const ir::Op& op : g.ops())
    if (op.domain == "ai.planner" && op.op_type == "BatchNormStats") {
      b.statistics += all_reduce(static_cast<double>(g.tensor(op.outputs[0]).num_bytes()));
      ++b.batch_norms;
    }
  return b;
}

TEST_CASE("data parallelism on resnet50_train: gradients and batch-norm statistics only") {
  Bytes b = data_parallel_bytes("resnet50_train.onnx", 32, 8);
  CHECK(b.batch_norms == 53);
  CHECK(b.statistics > 0);
  CHECK(b.simulated == doctest::Approx(b.gradients + b.statistics).epsilon(1e-9));
}

TEST_CASE(
    "data parallelism on bert_base_train: gradients only (attention reshapes split the batch)") {
  Bytes b = data_parallel_bytes("bert_base_train.onnx", 32, 8);
  CHECK(b.batch_norms == 0);
  CHECK(b.simulated == doctest::Approx(b.gradients).epsilon(1e-9));
}

}  // namespace
}  // namespace planner::analysis

int main(int argc, char** argv) {
  if (!std::filesystem::exists(planner::analysis::train_dir() / "resnet50_train.onnx") ||
      !std::filesystem::exists(planner::analysis::train_dir() / "bert_base_train.onnx")) {
    std::cout << "SKIPPED: " << planner::analysis::train_dir().string()
              << " lacks the training-mode models\n";
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
