// `plan`'s training step: the step variants (--recompute and --zero auto) cheapest first, each
// skipped where its memory floor already exceeds the limit, and, where none fits and the user
// pinned no part of the step's shape, the shape sized: micro-batches (gradient accumulation)
// and pipeline stages that bring the floor within the memory, each candidate planned and the
// fastest that fits kept (docs/search.md, "Sizing the step").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/pipeline.h"
#include "cli/search_session.h"

namespace planner::cli {

/// A step planned: the flags it was planned with, its session and its outcome.
struct PlannedStep {
  PipelineFlags flags;
  SearchSession session;
  PlanOutcome outcome;
  /// Where nothing fits and the shape was sized: the shapes tried and what each needs.
  std::string sizing;
};

/// The peak per device of `step`'s least-memory layout: its recomputation and micro-batches,
/// one stage, data parallelism over every GPU of the plan's block (all of them, or one
/// replica's) with parameters, gradients and optimizer state sharded (ZeRO-3), its compiled
/// step simulated. No plan of the step at these micro-batches holds fewer bytes on its largest
/// device by more than a layer's gathered parameters (docs/search.md). Unset where data
/// parallelism cannot split the micro-batch evenly over the block (then it is no floor) or the
/// step is not training.
Expected<std::optional<int64_t>> memory_floor(const PipelineFlags& step, const SearchFlags& search);

/// Plans `pipeline`'s step: the variants of step_variants(true) in order, the first that fits
/// (`fewest`: the one on the fewest GPUs). `first` is the session of the first variant, already
/// opened (the caller checked its outputs against it). Where none fits, the step is training,
/// --batch is given and no part of its shape is pinned (PipelineFlags::shape_pinned), the shape
/// is sized. Where nothing fits, the first variant planned whole (for the message).
Expected<PlannedStep> plan_step(const PipelineFlags& pipeline, const SearchFlags& search,
                                SearchSession first, bool fewest);

}  // namespace planner::cli
