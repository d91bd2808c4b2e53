// The order of a step's passes on each rank (micro_batch.h): one pass after the other, or, for
// a plan whose operators sit on pipeline stages (device blocks, search/pipeline.h), the
// schedules of GPipe (every forward pass, then every backward pass) and 1F1B (PipeDream-Flush:
// a stage s of K runs K - s - 1 forward passes ahead, then alternates one forward and one
// backward pass, then drains the backward passes).
//
// A pass on a rank is two chunks, its forward part (kernels of forward operators and the
// transfers they read) and its backward part (the rest: backward and recompute kernels, the
// gradient accumulations, and in the last pass the optimizer step). Every rank of a stage runs
// the same order, so collectives inside a stage meet in order; messages between stages pair
// up in the order both sides issue them. assemble_passes checks both, and that the programs can
// run to the end with buffered sends (no rank waits for a step another rank never reaches).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/program.h"
#include "support/expected.h"

namespace planner::codegen {

enum class Schedule : uint8_t {
  kSequential,  ///< each pass whole, one after the other (data and tensor parallelism)
  kGPipe,       ///< all forward parts, then all backward parts
  k1F1B,        ///< warm-up forward parts, then one forward and one backward, then the rest
};

const char* schedule_name(Schedule schedule);  ///< "sequential", "gpipe", "1f1b"
/// What reports print: the schedule's name, with virtual stages "interleaved 1f1b, 2 model
/// chunks per stage"; schedule_phrase: "1f1b schedule", "interleaved 1f1b schedule, 2 model
/// chunks per stage".
std::string schedule_label(std::string_view name, int virtual_stages);
std::string schedule_phrase(std::string_view name, int virtual_stages);
std::optional<Schedule> schedule_from_name(std::string_view name);

/// One pass's forward or backward part on one rank.
struct PassChunk {
  std::vector<Step> steps;
  /// Per step: which communication it is (the single pass's instance and the pass), so the
  /// pairing can be checked; -1 for kernels.
  std::vector<int64_t> tags;
};

/// (pass, backward part) in the order a rank of `stage` (of `stages`) runs them.
std::vector<std::pair<int, bool>> chunk_order(Schedule schedule, int stage, int stages, int passes);

/// One unit of a rank's work with virtual stages: the forward or backward part of one pass
/// through one of the rank's model chunks (chunk c of a rank of stage s is the model's run
/// c * stages + s).
struct PassUnit {
  int pass = 0;
  bool backward = false;
  int chunk = 0;
  bool operator==(const PassUnit& o) const {
    return pass == o.pass && backward == o.backward && chunk == o.chunk;
  }
};

/// The units of a rank of `stage` (of `stages`) holding `virtual_stages` model chunks, in the
/// order it runs them. With one chunk, chunk_order's. With more, 1F1B is Megatron-LM's
/// interleaved schedule (Narayanan et al., SC'21, section 2.2.2; `forward_backward_pipelining_
/// with_interleaving` in Megatron-Core): forward unit i runs chunk (i / stages) % V of pass
/// (i / (stages * V)) * stages + i % stages (backward units the chunks in reverse), after
/// (stages - stage - 1) * 2 + (V - 1) * stages warm-up forward units (all of them when the
/// passes are the stages), one forward and one backward unit alternating, then the rest; GPipe
/// runs every forward unit in that order, then every backward unit. `passes` must be a multiple
/// of `stages` when V > 1 (as Megatron-LM requires).
std::vector<PassUnit> unit_order(Schedule schedule, int stage, int stages, int passes,
                                 int virtual_stages);

/// Whether `programs` run to the end with buffered sends, each rank in order: a receive waits
/// for its send, a collective for every member to reach it. Errors name what ranks wait at.
Expected<void> check_runs(const Programs& programs);

/// Writes each rank's chunks (`chunks[r][(2 * pass + backward) * virtual_stages + chunk]`)
/// into `out.ranks[r].steps` in its stage's order (unit_order). Errors: collectives or messages
/// that no longer pair up, or programs that cannot run to the end (named by rank and step).
Expected<void> assemble_passes(Programs& out, std::vector<std::vector<PassChunk>>& chunks,
                               Schedule schedule, const std::vector<int>& rank_stage, int stages,
                               int passes, int virtual_stages = 1);

}  // namespace planner::codegen
