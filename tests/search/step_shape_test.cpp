// The arithmetic that sizes a training step's shape to the memory (search/step_shape.h).
#include "search/step_shape.h"

#include <doctest/doctest.h>

using namespace planner::search;

TEST_CASE("a floor fitted through two micro-batch counts splits state from activations") {
  // 10 bytes of state, 80 of activations in one pass of the batch.
  const FloorFit fit = fit_floor(1, 90, 2, 50);
  CHECK(fit.fixed == doctest::Approx(10));
  CHECK(fit.per_pass == doctest::Approx(80));
  CHECK(fit.at(8) == doctest::Approx(20));
  // Floors that do not shrink: all state, nothing per pass, never negative.
  const FloorFit flat = fit_floor(4, 100, 8, 101);
  CHECK(flat.per_pass == 0);
  CHECK(flat.fixed == doctest::Approx(100));
}

TEST_CASE("the fewest micro-batches that bring the floor within the limit") {
  const FloorFit fit{10, 80};
  CHECK(micro_batches_within(fit, 1, 64, 1, 90) == 1);
  CHECK(micro_batches_within(fit, 1, 64, 1, 30) == 4);
  CHECK(micro_batches_within(fit, 2, 64, 1, 30) == 4);
  CHECK(micro_batches_within(fit, 1, 64, 1, 20) == 8);
  // Micro-batches of at least 16 of the 64: no more than 4 of them, too few for 20 bytes.
  CHECK(micro_batches_within(fit, 1, 64, 16, 20) == 0);
  // The state alone is over the limit: no count helps.
  CHECK(micro_batches_within(fit, 1, 64, 1, 9) == 0);
  // Counts must divide the batch: 48 stops at 16 (then 32 does not divide it).
  CHECK(micro_batches_within(fit, 1, 48, 1, 14) == 0);
  CHECK(micro_batches_within(fit, 1, 48, 1, 15) == 16);
}

TEST_CASE("pipeline stages hold the state kept whole inside a stage") {
  CHECK(stages_for_state(30, 100, 0.5, 64, 16) == 1);
  CHECK(stages_for_state(200, 100, 0.5, 64, 16) == 4);
  CHECK(stages_for_state(201, 100, 0.5, 64, 16) == 8);
  // Capped by the GPUs, the most stages allowed, and what divides the GPUs.
  CHECK(stages_for_state(10000, 100, 0.5, 8, 16) == 8);
  CHECK(stages_for_state(10000, 100, 0.5, 64, 16) == 16);
  CHECK(stages_for_state(10000, 100, 0.5, 12, 16) == 4);
}
