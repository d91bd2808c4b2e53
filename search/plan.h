// Plan: the planner's decision for one model on one topology, and its JSON file — the contract
// between search and codegen, `planner diff` and CI. See docs/plan.md for the format.
//
// The file is deterministic: the same plan gives byte-identical text (ordered keys, fixed
// number formatting, no timestamps or elapsed times), whatever machine or thread count made it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/op_config.h"
#include "analysis/sharding.h"
#include "analysis/training_graph.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "support/expected.h"

namespace planner::search {

/// The plan-file schema version this planner writes and the only one it reads.
inline constexpr int kPlanSchemaVersion = 1;

/// The model a plan was made for.
struct PlanModel {
  std::string name;       ///< the model's graph name (for people; the hash identifies it)
  std::string sha256;     ///< SHA-256 of the model file's bytes, 64 lowercase hex digits
  int64_t num_nodes = 0;  ///< operators in the imported (forward) model
  /// Where the model file was, relative to the plan file's folder ('/'-separated; empty when
  /// not recorded): where `compile` and `explain` look first (the hash must still match).
  std::string path;
  bool operator==(const PlanModel&) const = default;
};

/// The device topology a plan was made for.
struct PlanTopology {
  std::string name;     ///< the topology's name (preset or the "name" of its JSON file)
  int num_devices = 0;  ///< GPUs; every device id in the plan is in [0, num_devices)
  int num_nodes = 0;    ///< machines (hosts) the GPUs sit in
  bool operator==(const PlanTopology&) const = default;
};

/// How the plan was searched for: enough to reproduce it.
struct PlanSearch {
  std::string algorithm;  ///< e.g. "mcmc", "dp"
  uint64_t seed = 0;      ///< the random seed the search ran with
  /// The search's options, in the order the search lists them (an ordered JSON object).
  nlohmann::ordered_json options = nlohmann::ordered_json::object();
  bool operator==(const PlanSearch&) const = default;
};

/// What one training (or inference) step costs, as predicted by the simulator.
struct PlanMetrics {
  double step_time_s = 0;         ///< time of one step, seconds
  int64_t peak_memory_bytes = 0;  ///< peak memory of the most loaded device
  int64_t comm_bytes = 0;         ///< bytes sent by all devices together in one step
  bool operator==(const PlanMetrics&) const = default;
};

/// One operator of the (training) graph and how it is parallelised.
struct PlanOp {
  std::string name;     ///< unique within the plan
  std::string op_type;  ///< e.g. "Gemm"
  std::string domain;   ///< "" for the default ONNX domain, e.g. "ai.planner"
  analysis::Phase phase = analysis::Phase::kForward;  ///< forward, backward or update
  /// The forward operator this one was derived from (Tofu's operator group); absent for
  /// forward operators and for operators that belong to no group.
  std::optional<std::string> group;
  analysis::OpConfig config;  ///< how it is split and on which devices
  bool operator==(const PlanOp&) const = default;
};

/// One tensor and how it is laid out over the devices.
struct PlanTensor {
  std::string name;                                   ///< unique within the plan
  ir::DType dtype = ir::DType::kFloat32;              ///< element type
  std::vector<int64_t> shape;                         ///< static shape; {} is a scalar
  ir::TensorRole role = ir::TensorRole::kActivation;  ///< input, param, activation, ...
  analysis::Sharding sharding;                        ///< tiles, partial sums, replicas, devices
  bool operator==(const PlanTensor&) const = default;
};

/// A complete plan: what the plan file holds.
struct Plan {
  int schema_version = kPlanSchemaVersion;  ///< always kPlanSchemaVersion when written
  PlanModel model;                          ///< the model it is for
  PlanTopology topology;                    ///< the devices it runs on
  std::string mode = "train";               ///< "train" or "infer"
  PlanSearch search;                        ///< how it was found
  PlanMetrics predicted;                    ///< the predicted cost of this plan
  /// Predicted costs of reference plans by name; "data_parallel" is always present.
  std::map<std::string, PlanMetrics> baselines;
  std::vector<PlanOp> ops;          ///< every operator, in graph order
  std::vector<PlanTensor> tensors;  ///< every tensor, in graph order
  bool operator==(const Plan&) const = default;
};

/// Checks what the JSON types cannot: mode, hashes, non-negative metrics, unique names, groups
/// naming forward operators, configurations and shardings fitting the topology (and shapes).
/// Messages start with the JSON path of the offending field, e.g. "$.ops[3].config: ...".
Expected<void> validate_plan(const Plan& plan);

/// The plan file's text: 2-space indented JSON with keys in a fixed order and a trailing
/// newline. Doubles are written in the shortest form that reads back to the same value.
/// Precondition: validate_plan(plan) succeeds (write_plan checks it).
std::string plan_to_json(const Plan& plan);

/// Reads a plan file's text; `source` names it in errors ("plan.json: $.ops[3].config: ...").
/// Refuses unknown fields, wrong types, unsupported schema versions and anything
/// validate_plan refuses.
Expected<Plan> parse_plan(std::string_view text, const std::string& source);

/// Reads and parses the plan file at `path`.
Expected<Plan> load_plan(const std::string& path);

/// Validates `plan` and writes it to `path` atomically: the text goes to a temporary file in
/// the same folder, which is renamed over `path` only once complete, so a reader never sees a
/// half-written plan and a failed write leaves an existing file untouched.
Expected<void> write_plan(const Plan& plan, const std::string& path);

}  // namespace planner::search
