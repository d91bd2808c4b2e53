// Per-rank programs: what each rank of a partitioned step does, in order — kernels on slices
// and the communication between them. The core IR of codegen: the partitioned ONNX files,
// the manifest and the launcher are all printed from it.
//
// Programs are in SSA form: every step writes fresh buffers, and a buffer holds one box
// (region) of one tensor of the original graph on one rank. Each rank's step list is the
// projection of one global sequence onto that rank (a send comes right before its recv), so
// with buffered sends every blocking call has its partner earlier in the sequence: no
// deadlock, and point-to-point messages between two ranks match in FIFO order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/sharding.h"
#include "analysis/strategies.h"
#include "importers/topology.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/precision.h"

namespace planner::codegen {

/// Where a buffer's value comes from before the step runs.
enum class BufferInit : uint8_t {
  kComputed,  ///< written by a step of the program
  kUniform,   ///< rt::fill_uniform(seed, tensor name, global shape, region offset, lo, hi)
  kZeros,     ///< zeros (optimizer state)
  kConstant,  ///< the bytes in `data` (a slice of a graph constant, or a rewritten attribute)
};

/// One buffer of one rank: a box of a tensor of the original graph (or a helper constant).
struct Buffer {
  int id = 0;                           ///< index in Programs::buffers
  int rank = 0;                         ///< the rank that owns it
  ir::TensorId tensor = ir::kNoTensor;  ///< the original tensor (kNoTensor: helper constant)
  std::string tensor_name;              ///< its name (or a generated one for helpers)
  /// kUniform: the tensor whose values it is drawn as, when not its own (a tied embedding's
  /// copy starts as the original: analysis/tied_copies.h); "" for its own.
  std::string values_of;
  ir::DType dtype = ir::DType::kFloat32;
  std::vector<int64_t> global_shape;  ///< the original tensor's shape
  analysis::Box region;               ///< the box it holds, in global coordinates
  BufferInit init = BufferInit::kComputed;
  double lo = -1, hi = 1;     ///< kUniform's range
  std::vector<uint8_t> data;  ///< kConstant's bytes (little-endian, row-major)
  /// Holds a partial sum (before its all-reduce).
  bool partial = false;

  std::vector<int64_t> shape() const;
  bool persistent() const { return init != BufferInit::kComputed; }
};

/// What a step does.
enum class StepKind : uint8_t {
  kKernel,         ///< run an operator (the original op on slices, or Slice/Concat/ZerosLike)
  kAllReduce,      ///< inputs[0] reduced over `group` into outputs[0]
  kAllGather,      ///< inputs[0] gathered along `axis` over `group` into outputs[0]
  kAllToAll,       ///< inputs[0] split along `axis`, exchanged, concatenated along `axis2`
  kReduceScatter,  ///< inputs[0] reduced over `group`; member j keeps chunk j along `axis`
  kSend,           ///< inputs[0] sent to `peer`
  kRecv,           ///< outputs[0] received from `peer`
};

/// The text name of a step kind: "kernel", "all_reduce", ...
const char* step_kind_name(StepKind kind);

/// One step of a rank's program.
struct Step {
  StepKind kind = StepKind::kKernel;
  // Kernels.
  std::string op_type;                              ///< e.g. "Gemm", "Slice"
  std::string domain;                               ///< "" or "ai.planner"
  std::string node;                                 ///< the original node's name ("" for helpers)
  ir::OpId op = ir::kNoOp;                          ///< the original op (kNoOp for helpers)
  std::map<std::string, ir::Attribute> attributes;  ///< rewritten for the shard
  bool fallback = false;  ///< the whole op run on gathered inputs (not sharded natively)
  /// The fraction of the original op's iteration space this kernel computes (1 for a whole op
  /// or a fallback): the simulator prices the shard's FLOPs as this share of the op's.
  double work = 1.0;
  // Buffers (-1 for an absent optional input/output).
  std::vector<int> inputs;
  std::vector<int> outputs;
  // Communication.
  std::vector<int> group;  ///< member ranks in collective order
  int peer = -1;           ///< send/recv partner
  int64_t axis = 0;        ///< gather / split / scatter axis
  int64_t axis2 = 0;       ///< all-to-all concat axis
  analysis::Reducer reducer = analysis::Reducer::kSum;
  /// kAllGather / kReduceScatter: each member's extent along `axis`, in group order (its input
  /// piece's, its output piece's), so the runtime need not exchange them.
  std::vector<int64_t> extents;
};

/// One rank's step list.
struct RankProgram {
  int rank = 0;
  std::vector<Step> steps;
};

/// How one operator was compiled (for reports and docs).
struct OpReport {
  std::string name, op_type, domain;
  std::string config;
  bool native = true;  ///< every shard ran natively (no fallback)
  std::string why;     ///< why a shard fell back (the first one's reason), else ""
};

/// Programs that are two of the `replicas` identical data-parallel replicas of a larger step
/// (search/replicas.h): a plan for a cluster, priced without compiling every replica. The
/// simulator prices an all-reduce between the two replicas on the whole cluster, over every
/// replica's counterpart of its members, and counts every replica's bytes; everything else is
/// the same in every replica. Only for pricing: launchers and runtimes run whole steps.
struct ReplicaSet {
  int replicas = 2;                                    ///< replicas of the whole step
  std::shared_ptr<const importers::Topology> cluster;  ///< the whole cluster
  std::vector<int> replica;                            ///< per rank: 0 or 1
  std::vector<std::vector<int>> counterparts;          ///< per rank: its devices in all replicas
};

struct RankClasses;  // rank_classes.h

/// The compiled step: every rank's program and the buffers they use.
struct Programs {
  int num_ranks = 0;
  bool train = false;
  /// The step's precision (docs/runtime.md): buffers of 16-bit activations say so by their
  /// dtype; the launcher switches TF32 on from it, and verify picks its tolerance from it.
  ir::Precision precision = ir::Precision::kFp32;
  std::vector<Buffer> buffers;
  std::vector<RankProgram> ranks;
  /// Buffers whose values are graph outputs (model outputs, updated parameters and state), in
  /// graph-output order; replicas included.
  std::vector<int> outputs;
  /// (updated buffer, resident buffer) pairs: after a training step the updated parameter or
  /// optimizer state is copied back for the next step.
  std::vector<std::pair<int, int>> carries;
  /// ZeRO stage 3: an all-gather of a parameter starts no earlier than the kernel before it
  /// (FSDP gathers a layer's parameters as the pass reaches the layer, one operator ahead), so
  /// the schedule does not hoist every gather to the start of the step.
  bool gather_parameters_late = false;
  /// Gradients are reduced over the data-parallel ranks once the rank's backward pass has
  /// ended, not overlapped with it (Megatron-LM's DistributedDataParallel without
  /// --overlap-grad-reduce, which `--framework megatron` prices without ZeRO): every all-reduce
  /// or reduce-scatter of a parameter's gradient waits for the rank's last backward kernel.
  bool reduce_gradients_after_backward = false;
  /// The order of the passes of a step of several micro-batches (codegen/pipeline_schedule.h):
  /// "sequential", "gpipe" or "1f1b".
  std::string schedule = "sequential";
  /// Model chunks per rank of a pipelined step (virtual stages, pipeline_schedule.h unit_order):
  /// 1 unless the passes run Megatron-LM's interleaved schedule.
  int virtual_stages = 1;
  /// Set when these programs stand for a larger step of data-parallel replicas (pricing only).
  std::shared_ptr<const ReplicaSet> replica_set;
  /// Set when only one representative of each class of alike ranks keeps its steps
  /// (rank_classes.h): the others' lists are empty and their figures are their
  /// representatives'. Only for pricing.
  std::shared_ptr<const RankClasses> symmetry;
  std::vector<OpReport> ops;

  /// Whether rank `r` keeps its steps (every rank, unless `symmetry` is set).
  bool has_steps(int r) const;
  /// A readable listing: per rank, one line per step.
  std::string to_text() const;
  /// A buffer's display name: "b7 tensor[0:32,0:64]", with " f16" / " bf16" for 16-bit ones.
  std::string buffer_label(int id) const;
};

}  // namespace planner::codegen
