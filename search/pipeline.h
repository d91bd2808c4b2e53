// Pipeline stages (issue 16): a plan whose operators sit on K consecutive blocks of n / K
// devices, the forward operators in topological order cut into K runs of about equal time.
// Each stage runs the intra-operator plan a search found for one block (tensor and data
// parallelism inside it, as Megatron-LM's 3-D layouts and Alpa's inter-/intra-operator split
// do), and the compiled step runs the micro-batches through the stages in a pipeline schedule
// (codegen/pipeline_schedule.h), so the simulator sees the bubbles and each stage's
// activations as they are.
//
// The search inside a stage prices its block alone (its cost tables know nothing of the other
// stages); the stage count is pinned (--pipeline-stages), and every whole plan is judged on the
// compiled pipelined step. docs/search.md, "Pipeline stages", says what is and is not searched.
#pragma once

#include <vector>

#include "search/search.h"

namespace planner::search {

/// The pipeline stage of each of `num_devices` ranks: K consecutive blocks of n / K.
std::vector<int> rank_stages(int num_devices, int stages);

/// Whether `configs` put every operator on one block of n / K devices (a pipelined plan).
bool on_stage_blocks(const std::vector<analysis::OpConfig>& configs, int num_devices, int stages);

/// Which stage each group of `context.space` runs on: the groups led by forward operators, in
/// topological order, cut into `stages` runs so that the slowest stage is as fast as it can be
/// (their operators' slowest shards under `configs`, which are for `context`'s devices, one
/// block; with `whole`, the lowering of all K blocks, each stage's time on its own block's
/// devices, so a faster block takes more of the model), boundaries at kept single-tensor cuts;
/// every other group runs where the forward operators it reads from run (the last stage if
/// none).
/// With `virtual_stages` V > 1 the forward operators are cut into stages x V runs, run j on
/// stage j % stages (Megatron-LM's interleaved layout), and the result is each group's run.
std::vector<int> balance_stages(const SearchContext& context,
                                const std::vector<analysis::OpConfig>& configs, int stages,
                                const analysis::Lowering* whole = nullptr, int virtual_stages = 1);

/// Each operator's model chunk on its stage (0 .. virtual_stages - 1) in a plan placed on
/// `stages` blocks of `num_devices` with virtual stages: the forward operators in topological
/// order walk the stages 0, 1, ..., K - 1 once per chunk, so the chunk is how many times the
/// stage went back; the other operators take their forward operator's (training.op_group),
/// else the latest among the operators they read from. Errors: the forward operators walk
/// the stages more than `virtual_stages` times (the plan is not so laid out).
Expected<std::vector<int>> op_chunks(const ir::Graph& graph,
                                     const analysis::TrainingGraph* training,
                                     const std::vector<analysis::OpConfig>& configs,
                                     int num_devices, int stages, int virtual_stages);

/// `configs` (all on the first block of `block` devices) with each group's operators moved to
/// its stage's block.
std::vector<analysis::OpConfig> place_on_stages(const GroupSpace& space,
                                                std::vector<analysis::OpConfig> configs,
                                                const std::vector<int>& group_stage, int block);

/// `info`'s search on the first n / K devices of `context`'s topology (a lowering of its own),
/// its plan then placed on K stages; whole plans the search judges are judged placed.
Expected<SearchResult> run_pipelined(const SearchInfo& info, const SearchContext& context,
                                     const SearchOptions& options, int stages);

}  // namespace planner::search
