// What the host spends on the device, counted per thread (each rank runs on its own thread):
// the launcher's --report reads them per step (docs/runtime.md, "Counters").
#pragma once

#include <cstdint>

namespace planner::rt {

/// This thread's totals since it started.
struct HostCounters {
  int64_t host_syncs = 0;             ///< waits of the host for the device (cuda; cpu: step ends)
  int64_t host_fallback_kernels = 0;  ///< kernels the cuda backend ran on the host
};

/// The calling thread's counters.
HostCounters host_counters();

namespace detail {
void count_host_sync();
void count_host_fallback();
}  // namespace detail

}  // namespace planner::rt
