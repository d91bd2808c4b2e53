// Compute cost of operators on a device: a roofline with an efficiency factor per operator
// class, or measured kernel times from a --costs file (FlexFlow's way), interpolated between
// measured sizes.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "importers/topology.h"
#include "ir/graph.h"
#include "support/expected.h"

namespace planner::analysis {

/// Operators grouped by how well they use a GPU.
enum class OpClass : uint8_t {
  kMatmul,         ///< MatMul, Gemm and their gradients: tensor-core bound
  kConv,           ///< convolutions and their gradients
  kRecurrent,      ///< fused LSTM/GRU/RNN: matmuls in a sequential loop
  kElementwise,    ///< memory bound, one pass
  kReduction,      ///< reductions, softmax, normalisation: memory bound, extra passes
  kDataMovement,   ///< transpose, concat, slice, gather, pad: memory bound
  kShape,          ///< reshape and kin: free (a view)
  kOptimizer,      ///< parameter updates: memory bound
};
inline constexpr int kNumOpClasses = 8;
std::string_view op_class_name(OpClass c);

/// The class of an operator, from its type and domain.
OpClass classify(const ir::Op& op);

/// Fraction of peak a class reaches: compute (FLOP/s) and memory (bytes/s).
struct Efficiency {
  double compute = 1.0;
  double memory = 1.0;
};

/// Options of the compute cost model.
struct ComputeCostOptions {
  /// Per class: the fraction of peak FLOP/s and of memory bandwidth kernels reach. Defaults
  /// are typical of cuBLAS/cuDNN and fused element-wise kernels on recent GPUs.
  std::array<Efficiency, kNumOpClasses> efficiency = {{
      {0.70, 0.80},  // matmul
      {0.60, 0.80},  // conv
      {0.40, 0.60},  // recurrent
      {1.00, 0.80},  // elementwise
      {1.00, 0.60},  // reduction
      {1.00, 0.70},  // data movement
      {1.00, 1.00},  // shape
      {1.00, 0.80},  // optimizer
  }};
  /// Fixed cost of launching one kernel, seconds.
  double launch_overhead = 4e-6;
  /// Use TF32 tensor cores for f32 matmuls and convolutions (as cuBLAS does when allowed).
  bool allow_tf32 = false;
};

/// One measured kernel time (an entry of a --costs file).
struct MeasuredKernel {
  std::string op_type;
  std::string domain;
  std::string attributes;                    ///< canonical "k=v;k=v" text
  std::vector<std::vector<int64_t>> shapes;  ///< input shapes
  std::string dtype;                         ///< element type of the first input, "f32"
  double seconds = 0;
  double work = 0;  ///< input element count: the size measure interpolation uses
};

/// A --costs file: measured times, looked up by operator type, attributes and shapes.
/// Format (JSON, written by the launcher; docs/costs.md):
///   {"schema": "planner-costs/1", "device": "NVIDIA H100 80GB HBM3",
///    "kernels": [{"op_type": "MatMul", "domain": "", "attributes": "", "input_shapes":
///                 [[8,256,768],[768,768]], "dtype": "f32", "seconds": 1.2e-4}, ...]}
class MeasuredCosts {
 public:
  /// Loads a costs file; errors name the file and the JSON path.
  static Expected<MeasuredCosts> load(const std::string& path);
  static Expected<MeasuredCosts> parse(const std::string& json_text, const std::string& source);

  /// The measured time for an operator with these input shapes: an exact match, else linear
  /// interpolation in `work` (input element count) between the nearest measurements of the same type and attributes
  /// (proportional scaling beyond the measured range); nullopt when the type was not measured.
  std::optional<double> lookup(const ir::Op& op, const std::vector<std::vector<int64_t>>& shapes,
                               double work) const;

  const std::string& device() const { return device_; }
  size_t size() const { return kernels_.size(); }

 private:
  std::string device_;
  std::vector<MeasuredKernel> kernels_;
  // (op_type, domain, attributes) -> kernel indices sorted by flops
  std::map<std::string, std::vector<size_t>> by_kind_;
};

/// Canonical attribute text of an op, as used by MeasuredCosts: "k=v;k=v" sorted by key.
std::string attribute_key(const ir::Op& op);

/// The compute time model.
class ComputeCostModel {
 public:
  ComputeCostModel(ComputeCostOptions options = {}, const MeasuredCosts* measured = nullptr)
      : options_(options), measured_(measured) {}

  /// Seconds for a kernel of `op`'s class doing `flops` FLOPs and moving `bytes` bytes on a
  /// device of `type`: max(flops / (peak * eff.compute), bytes / (bandwidth * eff.memory)) plus
  /// the launch overhead (shape ops cost nothing).
  double roofline(const importers::DeviceType& type, const ir::Op& op, ir::DType dtype,
                  double flops, double bytes) const;

  /// Seconds for one device to run `op` on inputs of `input_shapes` (its shard of the work):
  /// the measured time when the costs file has this type, the roofline otherwise. `flops` and
  /// `bytes` describe the shard.
  double op_time(const importers::DeviceType& type, const ir::Op& op, ir::DType dtype,
                 const std::vector<std::vector<int64_t>>& input_shapes, double flops,
                 double bytes) const;

  const ComputeCostOptions& options() const { return options_; }

 private:
  ComputeCostOptions options_;
  const MeasuredCosts* measured_;
};

}  // namespace planner::analysis
