// The executor: runs one rank's step program (what `planner compile` writes into a launcher's
// tables) on either backend. The same code orders kernels, collectives and copies on the cpu
// and cuda backends; the backends differ only below it (memory, kernels, communicators), so a
// run on the cpu backend exercises exactly the sequence a GPU runs (docs/runtime.md,
// "The executor").
//
// Memory is one arena per rank, allocated once by init(): every buffer sits at the offset the
// compiler assigned it (codegen/memory_plan.h), so a step allocates nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "planner_rt/collectives.h"
#include "planner_rt/kernels.h"
#include "planner_rt/profiler.h"
#include "planner_rt/tensor.h"

namespace planner::rt {

/// What a step does (the planner's codegen::StepKind numbering).
enum class StepKind : int {
  kKernel = 0,
  kAllReduce = 1,
  kAllGather = 2,
  kAllToAll = 3,
  kReduceScatter = 4,
  kSend = 5,
  kRecv = 6
};

/// Where a buffer's value comes from before the first step (codegen::BufferInit's numbering).
enum class BufferInit : int { kComputed = 0, kUniform = 1, kZeros = 2, kConstant = 3 };

/// One buffer of one rank: a box of a tensor of the original graph.
struct BufferSpec {
  int rank = 0;
  DType dtype = DType::kFloat32;
  Shape shape, global_shape, offset;  ///< its shape, the tensor's, and the box's corner
  BufferInit init = BufferInit::kComputed;
  std::string name;
  double lo = 0, hi = 0;                ///< kUniform's range
  const unsigned char* data = nullptr;  ///< kConstant's bytes
  int64_t data_bytes = 0;
  int64_t arena_offset = 0;  ///< where it lives in its rank's arena
};

/// One step of a rank's program.
struct StepSpec {
  StepKind kind = StepKind::kKernel;
  std::string op_type, domain, node;
  Attributes attrs;
  std::vector<int> inputs, outputs, group;  ///< buffers (-1: absent); collective members
  int peer = -1;
  int64_t axis = 0, axis2 = 0;
  ReduceOp reduce = ReduceOp::kSum;
  /// all_gather / reduce_scatter: the members' extents along `axis` (may be empty).
  std::vector<int64_t> extents;
};

/// Every rank's program and the buffers they use.
struct Program {
  int num_ranks = 0;
  std::vector<BufferSpec> buffers;
  std::vector<int> outputs;                  ///< dumped after the last step
  std::vector<std::pair<int, int>> carries;  ///< (updated, resident): copied back per step
  std::vector<std::vector<StepSpec>> steps;  ///< per rank
  std::vector<int64_t> arena_bytes;          ///< per rank

  /// Checks what the executor relies on: buffer and rank indices in range, every buffer inside
  /// its rank's arena, steps' buffers on the step's rank. Throws Error naming what is wrong.
  void validate() const;
};

/// The stream a step runs on: kernels on the compute stream, collectives and point-to-point
/// messages on the communication stream (as the simulator models a rank).
enum class StreamKind : int { kCompute = 0, kComm = 1 };

/// How one rank's steps order across its two streams.
struct StreamPlan {
  std::vector<StreamKind> stream;  ///< per step
  /// Per step: the latest step of the *other* stream it must wait for (-1: none). A step reads
  /// what an earlier step wrote (read after write), or overwrites arena bytes an earlier step
  /// read or wrote (the memory plan reuses them: write after read or write).
  std::vector<int> wait_for;
  /// Per step: whether a later step waits for it (record an event after it).
  std::vector<bool> signals;
};

/// The stream plan of `rank`'s steps in `program` (ranges from the buffers' arena offsets).
StreamPlan plan_streams(const Program& program, int rank);

/// What one step cost the host, counted by the backend (docs/runtime.md, "Counters").
struct StepCounters {
  int64_t allocations = 0;            ///< device or host blocks allocated during the step
  int64_t host_syncs = 0;             ///< times the host waited for the device
  int64_t host_fallback_kernels = 0;  ///< kernels run on the host through copies (cuda)
  /// With ExecutorOptions::poison: one past the highest arena byte that holds anything but the
  /// poison after the step (the persistent buffers below count whole): the memory the step's
  /// kernels touched, measured on the bytes, not read off the planned layout. -1 without.
  int64_t touched_bytes = -1;
};

struct ExecutorOptions {
  uint64_t seed = 1;     ///< initialisation seed (rt::fill_uniform)
  bool profile = false;  ///< time every kernel (--costs): a host wait per kernel on cuda
  /// Fill the step's region of the arena with 0xFF bytes (NaN for floats) before each step, so
  /// a kernel that reads memory it did not write shows up (verify runs with it).
  bool poison = false;
  /// Called after every kernel step with the count of steps run (from 1), the step and its
  /// output tensors (verify's ReLU decisions: planner_rt/relu_decisions.h); empty: nothing.
  std::function<void(int64_t, const StepSpec&, const std::vector<Tensor>&)> after_kernel;
};

/// One rank's run of a Program. Steps are issued in program order; on cuda each goes to its
/// stream (StreamPlan) after waiting on the events its plan names, and the host waits once, at
/// the end of the step, for both streams. On cpu everything runs in issue order, which every
/// stream plan allows.
class Executor {
 public:
  /// Constructs the rank's communicator first (on cuda it makes the rank's GPU current).
  Executor(const Program& program, int rank, World& world, ExecutorOptions options);

  /// Allocates the arena and writes the persistent buffers' initial values.
  void init();
  /// Runs one step; returns its seconds (the host waits once, at its end). Steps are counted
  /// from 1: Adam updates without a step input or attribute run with this count, as
  /// torch.optim.Adam keeps it in its state.
  double step();

  /// A buffer of this rank (valid after init()).
  Tensor view(int buffer) const;
  /// The bytes this rank holds (the arena; reports and scratch excluded): the step's peak.
  int64_t peak_bytes() const { return step_peak_; }
  /// The counters of the last step().
  const StepCounters& last_step() const { return last_; }
  const Profiler& profiler() const { return profiler_; }
  Communicator& communicator() { return comm_; }
  Allocator& allocator() { return allocator_; }
  int rank() const { return rank_; }

 private:
  void run(const StepSpec& s, const Attributes& attrs);
  /// StepCounters::touched_bytes of the step just run (poison on).
  int64_t touched_extent() const;

  const Program& p_;
  int rank_;
  Communicator comm_;
  ExecutorOptions o_;
  Allocator allocator_;
  TensorBuffer arena_;
  int64_t transient_begin_ = 0;  ///< where the step's buffers start in the arena
  Profiler profiler_;
  StreamPlan streams_;
  std::vector<size_t> event_of_;  ///< per step that signals: its event
  StepCounters last_;
  int64_t step_peak_ = 0;
  std::vector<std::pair<int, int>> copies_;  ///< carries not written in place
  int64_t steps_run_ = 0;                    ///< steps completed
  /// Per step index: the attributes it runs with where the executor adds to the program's
  /// (Adam's "step", the count of this step).
  std::map<size_t, Attributes> counted_;
};

}  // namespace planner::rt
