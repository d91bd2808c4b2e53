// A shared model (../shared/models) prepared the way the planner prepares it for the
// benchmarks: imported, its training graph built, every operator analysed, and lowered onto
// an H100 cluster. Built once per (name, GPUs) and kept for the process.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "analysis/lowering.h"
#include "analysis/training_graph.h"
#include "importers/onnx_import.h"
#include "tdl/library.h"

namespace planner::bench {

struct SharedModel {
  analysis::TrainingGraph training;
  std::unique_ptr<tdl::Library> library;
  std::unique_ptr<analysis::StrategyCache> cache;
  analysis::GraphStrategies strategies;
  std::unique_ptr<importers::Topology> topology;
  std::unique_ptr<analysis::Lowering> lowering;
};

/// The prepared model, or null when ../shared/models lacks it or it does not import.
inline const SharedModel* shared_model(const std::string& name, int gpus) {
  static std::map<std::pair<std::string, int>, std::unique_ptr<SharedModel>> cache;
  auto key = std::make_pair(name, gpus);
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();
  auto path = std::filesystem::path(PLANNER_SHARED_DIR) / "models" / (name + ".onnx");
  if (!std::filesystem::exists(path)) return nullptr;
  auto p = std::make_unique<SharedModel>();
  auto forward = importers::import_model(path.string());
  if (!forward) return nullptr;
  auto tg = analysis::build_training_graph(*forward, {});
  if (!tg) return nullptr;
  p->training = std::move(*tg);
  auto lib = tdl::Library::builtin();
  if (!lib) return nullptr;
  p->library = std::make_unique<tdl::Library>(std::move(*lib));
  p->cache = std::make_unique<analysis::StrategyCache>(*p->library);
  auto all = analysis::analyze_graph(*p->cache, p->training.graph, name);
  if (!all) return nullptr;
  p->strategies = std::move(*all);
  p->topology = std::make_unique<importers::Topology>(importers::h100_cluster(gpus));
  p->lowering =
      std::make_unique<analysis::Lowering>(p->training.graph, p->strategies, *p->topology);
  return cache.emplace(key, std::move(p)).first->second.get();
}

}  // namespace planner::bench
