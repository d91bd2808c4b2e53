// The options a plan file records (search.options) read back into the flags that rebuild its step.
#pragma once

#include <string>

#include "cli/pipeline.h"
#include "search/plan.h"
#include "support/expected.h"

namespace planner::cli {

/// Reads the options `plan` records that shape the model and its step (batch, dims, shrink,
/// optimizer, recompute, precision, zero, micro_batches, pipeline_stages, schedule, replicas)
/// into `flags`, where the user's flags did not already set them (batch, dims, shrink). Each is
/// checked as a hand-edited file must be: its JSON type, its range and its agreement with the
/// plan's mode and GPU count; an error names the plan file and the option's JSON path
/// (`p.json: search.options.replicas: 3 replicas do not divide the plan's 16 GPUs`), never a
/// flag the user did not give. Options the step does not depend on (budget_s, seed, ...) are
/// left alone.
Expected<void> apply_plan_options(const search::Plan& plan, const std::string& plan_path,
                                  PipelineFlags& flags);

}  // namespace planner::cli
