// verify's adjudication of discrete decisions (docs/codegen.md, "Where the model of independent
// roundings fails: discontinuities"): where two runs that round differently decide a ReLU input
// within rounding of zero, or a max-pooling window of two values within rounding of each other,
// differently, the whole gradient of that element goes another way. When the comparison fails
// but every ReLU output agrees within the tolerance, verify runs the unpartitioned step again
// on the partitioned run's ReLU outputs (planner_rt/relu_decisions.h) and holds the partitioned
// step to that.
#pragma once

#include <string>
#include <vector>

#include "codegen/verify.h"

namespace planner::codegen {

/// The value of element `i` of a dumped slice (f16 and bf16 read exactly).
double dumped_element(const DumpedSlice& s, int64_t i);

/// Slices of one tensor placed into whole tensors (a tensor in one whole slice stays as it is):
/// a step of several micro-batches leaves each micro-batch's rows of a model output in its own
/// slice (micro_batch.h), and a partitioned run each rank's box.
std::vector<DumpedSlice> whole_tensors(const std::vector<DumpedSlice>& slices);

/// Moves the observed ReLU outputs ("relu:..." records of a launcher dump taken with
/// --observe-relu) out of `dump` and returns them.
std::vector<DumpedSlice> take_relu_records(std::vector<DumpedSlice>& dump);

/// Compares two runs' observed ReLU outputs: whether every element lies within `tolerance`
/// (relative to its tensor's largest magnitude) of the other run's, and how many one run kept
/// (output > 0) and the other dropped. `problem` is set where the runs observed different ReLUs.
ReluDispute compare_relu(const std::vector<DumpedSlice>& partitioned,
                         const std::vector<DumpedSlice>& reference, double tolerance);

/// Writes `slices` as a launcher dump (PLNRDUMP2), the file --impose-relu reads.
Expected<void> write_dump(const std::string& path, const std::vector<DumpedSlice>& slices);

}  // namespace planner::codegen
