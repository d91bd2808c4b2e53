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
  kMatmul,        ///< MatMul, Gemm and their gradients: tensor-core bound
  kConv,          ///< convolutions and their gradients
  kRecurrent,     ///< fused LSTM/GRU/RNN: matmuls in a sequential loop
  kElementwise,   ///< memory bound, one pass
  kReduction,     ///< reductions, softmax, normalisation: memory bound, extra passes
  kDataMovement,  ///< transpose, concat, slice, gather, pad: memory bound
  kShape,         ///< reshape and kin: free (a view)
  kOptimizer,     ///< parameter updates: memory bound
  kAttention,     ///< fused attention and its gradient (FlashAttention): tensor-core bound
};
inline constexpr int kNumOpClasses = 9;
std::string_view op_class_name(OpClass c);

/// The class of an operator, from its type and domain.
OpClass classify(const ir::Op& op);

/// Fraction of peak a class reaches on large kernels: compute (FLOP/s) in plain FP32, on TF32
/// tensor cores and on 16-bit tensor cores, and memory (bytes/s).
struct Efficiency {
  double compute = 1.0;
  double memory = 1.0;
  double tf32 = 1.0;
  double half = 1.0;
  double fp8 = 1.0;  ///< on FP8 tensor cores (--precision fp8's linear layers)
};

/// Options of the compute cost model: every parameter of the kernel model, in one place.
/// docs/cost-model.md gives each one's source and how the defaults were chosen (held against
/// the published steps of bench/accuracy/rows.json, fit rows only). A calibration file
/// (--calibration, parse_calibration) overrides any of them.
struct ComputeCostOptions {
  /// Per class: the fraction of peak that large kernels reach. Dense classes reach less on
  /// small or oddly shaped problems (see the tile, wave and depth factors below); memory-bound
  /// kernels reach less when they move few bytes (memory_half_bytes).
  std::array<Efficiency, kNumOpClasses> efficiency = {{
      // FP32, memory, TF32, 16-bit
      {0.90, 0.85, 0.84, 0.69, 0.70},  // matmul
      {0.62, 0.85, 0.165, 0.60},       // conv
      {0.40, 0.60, 0.20, 0.30},        // recurrent
      {1.00, 0.72, 1.00, 1.00},        // elementwise
      {1.00, 0.81, 1.00, 1.00},        // reduction
      {1.00, 0.75, 1.00, 1.00},        // data movement
      {1.00, 1.00, 1.00, 1.00},        // shape
      {1.00, 0.85, 1.00, 1.00},        // optimizer
      {0.50, 0.85, 0.25, 0.25},        // attention
  }};
  /// GEMM tile a thread block computes (rows x columns of the output); a problem is padded to
  /// whole tiles and tiles run in waves of one per streaming multiprocessor.
  int64_t tile_m = 128;
  int64_t tile_n = 128;
  /// Reduction depth at which a dense kernel reaches half its efficiency: K / (K + this).
  double depth_half = 27;
  /// Bytes at which a memory-bound kernel reaches half its bandwidth fraction.
  double memory_half_bytes = 1 << 20;
  /// Fixed cost of launching one kernel, seconds.
  double launch_overhead = 2.7e-6;
  /// Use TF32 tensor cores for f32 matmuls and convolutions (--precision tf32).
  bool allow_tf32 = false;
  /// --precision fp8: bytes moved per operand element to scale and cast a product's operands
  /// to FP8 (dynamic per-tensor scaling: an amax pass and a cast pass, reading 16 bits twice
  /// and writing 8, as separate kernels in eager PyTorch), and the kernels launched for it
  /// per operand. torch.compile fuses both into the operand's producer: 3 bytes, no launch
  /// (set by --framework, cli/pipeline.cpp).
  double fp8_cast_bytes = 5;
  int fp8_cast_launches = 2;
  /// How much slower than the fastest of its type one GPU may run: GPUs of one model run at
  /// different clocks under power management (Sinha et al., SC'22: 8% average variation between
  /// identical GPUs, up to 22%). Each GPU's slowdown is taken as uniform in [0, speed_spread]
  /// (average spread / 2); a step that synchronises n GPUs waits for the slowest: see
  /// sync_slowdown(), which the compiled step's simulation applies.
  double speed_spread = 0.2;
};

/// The factor by which the kernels of a step that synchronises `gpus` GPUs run slower than on
/// one GPU of typical speed: the expected slowest of n slowdowns uniform in [0, s] is
/// s n / (n + 1), and one GPU's typical one s / 2, so (1 + s n / (n + 1)) / (1 + s / 2). It is
/// bounded (the slowest GPU of a cluster is at most s slower): x1 on one GPU, x1.071 on 8,
/// x1.089 on 128, x1.091 at most (s = 0.2); docs/cost-model.md says which measured rows at
/// several scales ground it.
double sync_slowdown(const ComputeCostOptions& options, int gpus);

/// The shape of a dense kernel as the GEMM it runs: `batch` independent M x N x K products
/// (convolutions as implicit GEMMs, groups as the batch).
struct GemmShape {
  double batch = 1, m = 0, n = 0, k = 0;
};

/// The GEMM view of a matmul or convolution class operator (forward or gradient) with these
/// input shapes doing `flops` FLOPs; nullopt when the shapes do not say (the roofline then uses
/// the class's efficiency alone).
std::optional<GemmShape> gemm_shape(const ir::Op& op,
                                    const std::vector<std::vector<int64_t>>& shapes, double flops);

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
  /// interpolation in `work` (input element count) between the nearest measurements of the same
  /// type and attributes (proportional scaling beyond the measured range); nullopt when the type
  /// was not measured.
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

/// Reads a calibration file (JSON) over `base`: {"schema": "planner-calibration/1",
/// "efficiency": {"conv": {"compute": 0.8, "tf32": 0.3, ...}, ...}, "tile_m": 128, "tile_n":
/// 128, "depth_half": 32, "memory_half_bytes": 1048576, "launch_overhead": 5e-6}; every field
/// optional. Errors name the file and the JSON path.
Expected<ComputeCostOptions> parse_calibration(const std::string& json_text,
                                               const std::string& source,
                                               ComputeCostOptions base = {});
Expected<ComputeCostOptions> load_calibration(const std::string& path,
                                              ComputeCostOptions base = {});

/// The compute time model.
class ComputeCostModel {
 public:
  ComputeCostModel(ComputeCostOptions options = {}, const MeasuredCosts* measured = nullptr)
      : options_(options), measured_(measured) {}

  /// Seconds for a kernel of `op`'s class doing `flops` FLOPs and moving `bytes` bytes on a
  /// device of `type`: max(flops / (peak * compute efficiency), bytes / (bandwidth * memory
  /// efficiency)) plus the launch overhead (shape ops cost nothing). The compute efficiency of
  /// dense kernels falls with tile and wave quantisation and shallow reductions (`gemm`, when
  /// known); the memory efficiency falls for kernels moving few bytes.
  /// `launches` false: the operator runs inside a kernel another launched (fused: no launch
  /// overhead, and its bytes stream at the class's full bandwidth fraction).
  double roofline(const importers::DeviceType& type, const ir::Op& op, ir::DType dtype,
                  double flops, double bytes, const std::optional<GemmShape>& gemm = std::nullopt,
                  bool launches = true) const;

  /// The fraction of a dense kernel's class efficiency it keeps for its GEMM shape on `sms`
  /// streaming multiprocessors: tile padding, the last wave's idle multiprocessors, and depth.
  double shape_efficiency(const GemmShape& g, int sms) const;
  /// Under --precision fp8, the time to scale and cast an FP8 product's two operands (these
  /// input shapes) to FP8: memory-bound passes, ComputeCostOptions::fp8_cast_bytes.
  double fp8_cast_time(const importers::DeviceType& type,
                       const std::vector<std::vector<int64_t>>& input_shapes) const;

  /// Seconds for one device to run `op` on inputs of `input_shapes` (its shard of the work):
  /// the measured time when the costs file has this type, the roofline otherwise. `flops` and
  /// `bytes` describe the shard.
  /// An operator marked as fused into another's kernel (ir::Op::fused_launch) launches
  /// nothing; the callers leave its fused inputs' and outputs' bytes out of `bytes`. Measured
  /// times (--costs) are of unfused kernels and stay as measured.
  double op_time(const importers::DeviceType& type, const ir::Op& op, ir::DType dtype,
                 const std::vector<std::vector<int64_t>>& input_shapes, double flops,
                 double bytes) const;
  double op_time(const importers::DeviceType& type, const ir::Op& op, ir::DType dtype,
                 const std::vector<std::vector<int64_t>>& input_shapes, double flops, double bytes,
                 bool launches) const;

  const ComputeCostOptions& options() const { return options_; }

 private:
  ComputeCostOptions options_;
  const MeasuredCosts* measured_;
};

}  // namespace planner::analysis
