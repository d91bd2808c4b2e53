// Where each buffer of a compiled step lives: one arena per rank, with every buffer at an offset
// fixed at compile time from the lifetimes of the rank's program (docs/runtime.md, "Memory").
// The launcher allocates each rank's arena once and never allocates during a step; the
// simulator reports the arena's size as the rank's peak memory, so the predicted peak is the
// memory the launcher holds.
//
// Lifetimes are counted in program order (the order the launcher issues steps, which
// order_by_schedule has made the simulated schedule's): a buffer written by step i and last read
// by step j occupies its bytes from i to j inclusive; persistent buffers (parameters, optimizer
// state, inputs, constants) and the step's outputs stay all step. Two buffers share memory
// (alias) where the runtime writes in place:
// - an updated parameter or optimizer state (a carry) is written over its resident buffer when
//   nothing on the rank reads the resident buffer after the update (the update kernels are
//   element-wise, docs/runtime.md); otherwise it gets its own bytes and is copied back at the end
//   of the step;
// - an all-reduce's result is its input's buffer (NCCL reduces in place) when nothing reads the
//   input after it; so is a micro-batch's gradient accumulation's (an element-wise Add into its
//   first input, codegen/micro_batch.h).
// Offsets come from a best-fit allocation with coalescing, replayed over the program: the arena
// is the high-water mark of that allocation, at least the largest sum of live bytes and in
// practice within a few percent of it (MemoryPlan::live_peak_bytes keeps the lower bound).
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/program.h"

namespace planner::codegen {

/// Every buffer's place in its rank's arena.
struct MemoryPlan {
  /// Offsets and sizes are multiples of this (cuBLAS/cuDNN and vector loads want it).
  static constexpr int64_t kAlignment = 256;
  /// Per buffer: its byte offset in its rank's arena (an aliased buffer has its root's).
  std::vector<int64_t> offset;
  /// Per buffer: the buffer whose memory it is written into (-1: its own).
  std::vector<int> alias;
  /// Per rank: the arena's bytes (persistent region first, then the step's buffers).
  std::vector<int64_t> rank_bytes;
  /// Per rank: the persistent region's bytes (parameters, state, inputs, constants).
  std::vector<int64_t> rank_persistent_bytes;
  /// Per rank: the most bytes live at one step (aligned sizes): the bound any placement meets.
  std::vector<int64_t> rank_live_peak_bytes;

  /// The buffer whose bytes `b` uses (itself unless aliased).
  int root(int b) const;
};

/// A buffer's bytes as the arena holds them (rounded up to kAlignment; at least kAlignment).
int64_t arena_bytes_of(const Buffer& b);

/// Plans the memory of `programs` (deterministic: the same programs give the same offsets).
MemoryPlan plan_memory(const Programs& programs);

}  // namespace planner::codegen
