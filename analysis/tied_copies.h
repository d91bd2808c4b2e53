// A token embedding tied to the LM head, kept as two copies in a pipelined step, as Megatron-LM
// keeps it (Narayanan et al. 2021; megatron/model/module.py, "word embeddings" of the first and
// the last stage): the LM head on the last stage reads its own copy of the embedding table, so
// no stage sends the table every micro-batch. Both copies start equal and take the same step
// (the sum of both gradients: TrainingOptions::copy_tied_embeddings), so they stay equal and
// the step computes what the tied one computes (docs/training.md, "Gradients").
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/expected.h"

namespace planner::analysis {

/// A parameter and its copy.
struct TiedCopy {
  ir::TensorId original = ir::kNoTensor;
  ir::TensorId copy = ir::kNoTensor;
};

/// The suffix of a copy's name: "wte" is copied as "wte:copy".
inline constexpr const char* kCopySuffix = ":copy";

/// Rewrites `forward` so that every parameter read by exactly two operators, a Gather that looks
/// rows up in it (an embedding) and a matrix product (the head tied to it), gives the product a
/// copy of its own (same shape, type and stored values; named `<name>:copy`). Tensor ids of the
/// original graph stay; copies are appended. Errors name `source`.
Expected<std::vector<TiedCopy>> copy_tied_embeddings(ir::Graph& forward, const std::string& source);

/// The parameter whose initial values a copy takes ("wte:copy" -> "wte"), or kNoTensor when `t`
/// is no copy.
ir::TensorId copied_from(const ir::Graph& graph, ir::TensorId t);

}  // namespace planner::analysis
