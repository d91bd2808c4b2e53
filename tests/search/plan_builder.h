// A small, valid training plan shared by the search tests: a two-layer MLP on 8 GPUs.
#pragma once

#include <string>

#include "search/plan.h"

namespace planner::search::testing {

inline PlanOp make_op(std::string name, std::string type, analysis::Phase phase, std::string config,
                      std::optional<std::string> group = std::nullopt, std::string domain = "") {
  PlanOp op;
  op.name = std::move(name);
  op.op_type = std::move(type);
  op.domain = std::move(domain);
  op.phase = phase;
  op.group = std::move(group);
  op.config = *analysis::parse_op_config(config);
  return op;
}

inline PlanTensor make_tensor(std::string name, std::vector<int64_t> shape, ir::TensorRole role,
                              std::string sharding) {
  PlanTensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.role = role;
  t.sharding = *analysis::parse_sharding(sharding);
  return t;
}

/// fc1 -> relu1 -> fc2 under data parallelism, with a backward op and an update.
inline Plan mlp_plan() {
  using analysis::Phase;
  Plan p;
  p.model = {"mlp", std::string(64, 'a'), 3, ""};
  p.topology = {"dgx_h100", 8, 1};
  p.mode = "train";
  p.search.algorithm = "mcmc";
  p.search.seed = 42;
  p.search.options = nlohmann::ordered_json{{"iterations", 1000}, {"temperature", 0.5}};
  p.predicted = {0.0125, 4'000'000'000, 268'435'456};
  p.baselines["data_parallel"] = {0.0125, 4'000'000'000, 268'435'456};
  p.ops.push_back(make_op("fc1", "Gemm", Phase::kForward, "{b:8}@0-7"));
  p.ops.push_back(make_op("relu1", "Relu", Phase::kForward, "{b:8}@0-7"));
  p.ops.push_back(make_op("fc2", "Gemm", Phase::kForward, "{b:8}@0-7"));
  p.ops.push_back(make_op("fc2/grad_w", "Gemm", Phase::kBackward, "{b:8}@0-7", "fc2"));
  p.ops.push_back(
      make_op("fc1.weight/update", "SgdUpdate", Phase::kUpdate, "{}*R8@0-7", "fc1", "ai.planner"));
  p.tensors.push_back(make_tensor("x", {64, 1024}, ir::TensorRole::kInput, "S[8,1]@0-7"));
  p.tensors.push_back(
      make_tensor("fc1.weight", {1024, 4096}, ir::TensorRole::kParameter, "S[1,1]*R8@0-7"));
  p.tensors.push_back(make_tensor("h1", {64, 4096}, ir::TensorRole::kActivation, "S[8,1]@0-7"));
  p.tensors.push_back(
      make_tensor("fc2.weight", {4096, 1024}, ir::TensorRole::kParameter, "S[1,1]*R8@0-7"));
  return p;
}

}  // namespace planner::search::testing
