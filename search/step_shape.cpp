#include "search/step_shape.h"

#include <algorithm>

namespace planner::search {

FloorFit fit_floor(int m1, int64_t floor1, int m2, int64_t floor2) {
  FloorFit fit;
  const double f1 = static_cast<double>(floor1), f2 = static_cast<double>(floor2);
  // f1 = fixed + p / m1, f2 = fixed + p / m2  =>  p = (f1 - f2) / (1 / m1 - 1 / m2).
  const double span = 1.0 / m1 - 1.0 / m2;
  fit.per_pass = span > 0 ? std::max(0.0, (f1 - f2) / span) : 0.0;
  fit.fixed = std::max(0.0, f1 - fit.per_pass / m1);
  return fit;
}

int micro_batches_within(const FloorFit& fit, int from, int64_t batch, int64_t min_micro_batch,
                         int64_t limit) {
  for (int64_t m = std::max(1, from); m <= batch && m <= (1 << 16); m *= 2) {
    if (batch % m != 0 || batch / m < std::max<int64_t>(1, min_micro_batch)) break;
    if (fit.at(static_cast<int>(m)) <= static_cast<double>(limit)) return static_cast<int>(m);
  }
  return 0;
}

int stages_for_state(int64_t state, int64_t limit, double fraction, int gpus, int max_stages) {
  int k = 1;
  while (k * 2 <= std::min(gpus, max_stages) && gpus % (k * 2) == 0 &&
         static_cast<double>(state) / k > fraction * static_cast<double>(limit))
    k *= 2;
  return k;
}

}  // namespace planner::search
