// Micro-batches with gradient accumulation: one optimizer step made of M forward and backward
// passes over micro-batches of the global batch, as `loss.backward()` M times under DDP's
// `no_sync()` and one `optimizer.step()` (docs/training.md, "Micro-batches").
//
// The unit is the compiled step of one micro-batch (partition.h). Its steps fall in two kinds:
// - micro steps, run once per micro-batch: every kernel of a forward, backward or recompute
//   operator, and every transfer, collective or helper whose result such a step (or a graph
//   output, or a carry) reads;
// - optimizer steps, run once: update kernels, and the collectives and helpers that only feed
//   them — the reduction of partial gradients (all-reduce, reduce-scatter) among them.
// Buffers that micro steps write and optimizer steps read are gradients: each micro-batch adds
// its own into an accumulator on the rank that holds it, in the layout it was produced in
// (partial sums stay partial), so the gradient collectives run once per step, on the sum.
// The step's loss is the mean over the global batch, so each pass seeds its backward pass with
// 1/M of its own mean's gradient (LossGrad's scale divided by M, as a training loop divides the
// loss by the accumulation steps): the accumulated gradient is the whole batch's.
//
// Micro-batch i reads rows [i*b, (i+1)*b) of the global batch along axis 0 of every model input
// whose axis 0 is the micro-batch size b; other inputs are drawn afresh per micro-batch.
// So a step of M micro-batches of b updates the parameters as one pass over a batch of M*b
// does, where no operator mixes the rows of a batch (batch statistics). The step's model
// outputs are its last micro-batch's (as a training loop's `loss` after the loop): keeping every
// micro-batch's would hold memory no training job holds.
// Dropout draws a different mask per micro-batch (its seed is mixed with i). State that forward
// operators update (BatchNormalization's running statistics) passes from one micro-batch to
// the next.
#pragma once

#include <cstdint>

#include "analysis/training_graph.h"
#include "codegen/pipeline_schedule.h"
#include "codegen/program.h"
#include "support/expected.h"

namespace planner::codegen {

struct MicroBatchOptions {
  int micro_batches = 1;    ///< M: forward and backward passes per optimizer step
  int64_t micro_batch = 0;  ///< b: the batch of one pass (the graph's batch); 0: unknown
  /// The order of the passes on each rank (pipeline_schedule.h), and the pipeline stage of
  /// each rank (empty: one stage).
  Schedule schedule = Schedule::kSequential;
  int stages = 1;
  std::vector<int> rank_stage;
  /// Virtual stages (pipeline_schedule.h, unit_order): model chunks per rank, and each
  /// operator's chunk on its stage (search::op_chunks); empty: one chunk.
  int virtual_stages = 1;
  std::vector<int> op_chunk;
};

/// Each step's model chunk (virtual stages) on its rank: a kernel its operator's
/// (`op_chunk`); a send, collective or helper the chunk of the step on its rank that wrote
/// what it reads, else of the first step there that reads what it writes; a receive the chunk
/// its message arrives for: its send's, one more where the message goes back to an earlier
/// stage in a forward part (stage K - 1's chunk c feeds stage 0's chunk c + 1), one less where
/// it goes on to a later stage in a backward part. `backward_part` is
/// MicroBatchSplit::backward_part.
std::vector<std::vector<int>> step_chunks(const Programs& step, const std::vector<int>& op_chunk,
                                          const std::vector<int>& rank_stage,
                                          const std::vector<std::vector<bool>>& backward_part,
                                          int virtual_stages);

/// How a step's program splits into micro and optimizer steps (for reports and tests).
struct MicroBatchSplit {
  std::vector<std::vector<bool>> optimizer_step;  ///< per rank, per step: runs once per step
  /// Per rank, per step: part of a pass's backward part (backward and recompute kernels, what
  /// only they read, the optimizer step), not its forward part.
  std::vector<std::vector<bool>> backward_part;
  /// Per rank, per step: the communication it takes part in (one id for a collective's members
  /// or a send and its receive), -1 for kernels.
  std::vector<std::vector<int>> instance;
  /// A buffer a forward-part step reads that the backward part writes ("" if none): such a
  /// step runs only in the sequential schedule.
  std::string forward_reads_backward;
  std::vector<int> accumulated;  ///< buffers accumulated over micro-batches
};

/// Classifies the steps of `step` (one micro-batch's compiled training step). Errors: a buffer
/// the optimizer steps read that micro steps write and that is not a gradient.
Expected<MicroBatchSplit> split_micro_batch_steps(const Programs& step,
                                                  const analysis::TrainingGraph& training);

/// The peak memory of the step of `passes` passes from `programs`, the compiled step of
/// `simulated` passes (2 <= simulated <= passes): every pass after the second repeats the
/// lifetimes of the one before, except that the compiled step holds each pass's model inputs
/// all step (the launcher draws them once), so each rank's arena grows by its inputs per pass.
/// `rank_bytes`: each rank's arena for `programs` (ProgramCost::rank_peak_memory_bytes).
int64_t extended_peak_bytes(const Programs& programs, const std::vector<int64_t>& rank_bytes,
                            const ir::Graph& graph, int simulated, int passes);

/// The most steps (all ranks together) an unrolled step may have: 16 M, a few GB of program.
inline constexpr int64_t kMaxUnrolledSteps = int64_t{1} << 24;

/// The whole optimizer step: `step`'s micro steps once per micro-batch, in order, gradients
/// accumulated, then (in the last micro-batch, interleaved as `step` had them) the optimizer
/// steps. M = 1 returns `step` unchanged. Errors: more than kMaxUnrolledSteps steps in all.
Expected<Programs> unroll_micro_batches(const Programs& step,
                                        const analysis::TrainingGraph& training,
                                        const MicroBatchOptions& options);

}  // namespace planner::codegen
