// Timing and reporting: per-kernel timers, per-step time and peak memory per rank, and the
// writer of the planner's --costs file (measured kernel times).
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "planner_rt/kernels.h"

namespace planner::rt {

/// What a measured kernel is, as the planner looks it up in a --costs file.
struct KernelKey {
  std::string op_type;
  std::string domain;               ///< "" for ONNX
  std::string attributes;           ///< canonical text, see attribute_text()
  std::vector<Shape> input_shapes;  ///< of the present inputs, in order
  std::string dtype;                ///< short name of the first input's type ("f32")
  auto operator<=>(const KernelKey&) const = default;
};

/// Canonical attribute text, identical to the planner's: "k=v;k=v" sorted by key; ints `3`,
/// floats shortest round-trip (`0.5`, `1e-05`), strings `"SAME"`, lists `[1,1]`, `["a","b"]`.
std::string attribute_text(const Attributes& attrs);

/// Shortest text that reads back as the same double (std::to_chars), e.g. `1`, `0.1`, `1e-05`.
std::string format_double(double value);

/// Collects kernel times of one rank (not thread-safe: one per rank thread).
class Profiler {
 public:
  /// One kernel kind and every time measured for it.
  struct Entry {
    KernelKey key;
    std::vector<double> seconds;
    /// The median of `seconds` (mean of the middle two for an even count).
    double median() const;
  };

  /// Runs the kernel through run_kernel and records its time: wall time (steady_clock) on cpu,
  /// cudaEvents recorded around it on the rank's stream on cuda.
  void run(std::string_view domain, std::string_view op_type, const Attributes& attrs,
           std::span<const Tensor> inputs, std::span<const Tensor> outputs,
           std::string_view node = "");
  /// Records one measured time for a kernel on `inputs`.
  void record(std::string_view domain, std::string_view op_type, const Attributes& attrs,
              std::span<const Tensor> inputs, double seconds);
  /// Adds every sample of `other` (to combine ranks).
  void merge(const Profiler& other);
  /// Adds the samples of one entry (one read back from another process's report).
  void add(const Entry& entry);
  /// The entries, sorted by key: one per distinct (op type, domain, attributes, shapes, dtype).
  std::vector<Entry> entries() const;
  /// Total recorded seconds.
  double total_seconds() const;
  /// Forgets every sample.
  void clear() { entries_.clear(); }

 private:
  std::map<KernelKey, std::vector<double>> entries_;
};

/// Writes `{"schema": "planner-costs/1", "device": ..., "kernels": [...]}` with one kernel per
/// entry of `profiler` and its median time, in entries() order.
void write_costs_json(std::ostream& out, const std::string& device, const Profiler& profiler);

/// The host CPU's model name (from /proc/cpuinfo), or "cpu" when unknown.
std::string cpu_device_name();

/// The device kernels run on, for write_costs_json: cpu_device_name() on the cpu backend, the
/// calling thread's current GPU's name (e.g. "NVIDIA H100 80GB HBM3") on cuda.
std::string device_name();

/// Measures one training or inference step.
class StepTimer {
 public:
  /// Starts (or restarts) the clock; construction starts it too.
  void start() { begin_ = std::chrono::steady_clock::now(); }
  /// Seconds since start().
  double stop() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  }

 private:
  std::chrono::steady_clock::time_point begin_ = std::chrono::steady_clock::now();
};

/// The line every backend prints per rank and step:
/// "rank 3 step 1: 12.345 ms, peak 1.50 MiB (1572864 bytes)".
std::string step_report(int rank, int step, double seconds, int64_t peak_bytes);

}  // namespace planner::rt
