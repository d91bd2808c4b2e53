// Per-thread counters of what the host spends on the device (planner_rt/counters.h).
#include "planner_rt/counters.h"

namespace planner::rt {

namespace {
thread_local HostCounters tls_counters;
}  // namespace

HostCounters host_counters() {
  return tls_counters;
}

namespace detail {

void count_host_sync() {
  ++tls_counters.host_syncs;
}

void count_host_fallback() {
  ++tls_counters.host_fallback_kernels;
}

}  // namespace detail

}  // namespace planner::rt
