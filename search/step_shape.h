// Sizing a training step's shape to the memory: how many micro-batches and pipeline stages a
// step needs before any plan of it can fit, from the memory floors the driver measures
// (cli/step_sizing.h). Arithmetic only: no graph, no search.
#pragma once

#include <cstdint>

namespace planner::search {

/// A step's memory floor as a function of its micro-batch count m: `fixed + per_pass / m`
/// bytes per device. The floor is the peak of the step's least-memory layout (data parallelism
/// with every parameter, gradient and optimizer state sharded, ZeRO-3): what stays is the state's
/// share (`fixed`), what shrinks with smaller micro-batches the activations (`per_pass`).
struct FloorFit {
  double fixed = 0;
  double per_pass = 0;

  double at(int micro_batches) const { return fixed + per_pass / micro_batches; }
};

/// The fit through two measured floors, at m1 < m2 micro-batches. Measurements that do not
/// shrink with m (rounding, a floor set by state alone) fit `per_pass` 0; `fixed` is never
/// negative.
FloorFit fit_floor(int m1, int64_t floor1, int m2, int64_t floor2);

/// The smallest micro-batch count that is `from` times a power of two, divides `batch`, leaves
/// micro-batches of at least `min_micro_batch` and brings `fit` within `limit`; 0 if none does.
int micro_batches_within(const FloorFit& fit, int from, int64_t batch, int64_t min_micro_batch,
                         int64_t limit);

/// The pipeline stages (a power of two dividing `gpus`, at most `max_stages`) that leave each
/// stage's GPUs at most `fraction` of `limit` of `state` bytes (parameters and optimizer state
/// kept whole inside a stage, as data parallelism keeps them); 1 when one stage does, and the
/// most allowed when none does.
int stages_for_state(int64_t state, int64_t limit, double fraction, int gpus, int max_stages);

}  // namespace planner::search
