// A generated decoder (importers/gpt_model.h) as tests need it: imported exactly as the planner
// imports a file `planner generate` wrote (a scratch folder of this process, removed after),
// and its training step.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "analysis/training_graph.h"
#include "importers/gpt_model.h"
#include "importers/llama_model.h"
#include "importers/onnx_import.h"
#include "ir/graph.h"

namespace planner::testing {

/// A GPT small enough for the runtime's kernels: d_model 32, 4 heads, 8 tokens, 16 words.
inline importers::GptShape tiny_gpt_shape(int64_t layers, double dropout) {
  importers::GptShape shape;
  shape.layers = layers;
  shape.hidden = 32;
  shape.heads = 4;
  shape.seq = 8;
  shape.vocab = 16;
  shape.dropout = dropout;
  return shape;
}

/// A serialised model `planner generate` would write, imported with its batch dimension bound
/// to `batch` from a scratch folder of this process (removed after); fails the test on an error.
inline ir::Graph import_generated(const Expected<std::string>& bytes, int64_t batch) {
  REQUIRE_MESSAGE(bytes.has_value(), (bytes ? "" : bytes.error().message()));
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("planner_generated_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "tiny.onnx").string();
  std::ofstream(path, std::ios::binary) << *bytes;
  importers::ImportOptions options;
  options.batch = batch;
  auto g = importers::import_model(path, options);
  std::filesystem::remove_all(dir);
  REQUIRE_MESSAGE(g.has_value(), (g ? "" : g.error().message()));
  return std::move(*g);
}

/// The GPT of `shape`, imported with its batch dimension bound to `batch`.
inline ir::Graph import_generated_gpt(const importers::GptShape& shape, int64_t batch) {
  return import_generated(importers::gpt_model_bytes(shape, "tiny", "tiny.weights"), batch);
}

/// A Llama of d_model 32, 4 query heads over `kv_heads` key/value heads, 8 tokens, 16 words.
inline ir::Graph import_generated_llama(int64_t layers, int64_t kv_heads, int64_t batch) {
  importers::LlamaShape shape;
  shape.layers = layers;
  shape.hidden = 32;
  shape.heads = 4;
  shape.kv_heads = kv_heads;
  shape.seq = 8;
  shape.vocab = 16;
  shape.ffn = 64;
  return import_generated(importers::llama_model_bytes(shape, "tiny", "tiny.weights"), batch);
}

/// The training step of `forward` with Adam and `recompute`; fails the test on an error.
inline analysis::TrainingGraph adam_training_step(const ir::Graph& forward,
                                                  analysis::Recompute recompute) {
  analysis::TrainingOptions options;
  options.optimizer = analysis::Optimizer::kAdam;
  options.recompute = recompute;
  auto tg = analysis::build_training_graph(forward, options, "tiny.onnx");
  REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
  return std::move(*tg);
}

}  // namespace planner::testing
