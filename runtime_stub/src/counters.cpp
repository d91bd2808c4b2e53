// Per-thread state of the host side: the counters of planner_rt/counters.h and the host
// mirrors of backend.h.
#include "planner_rt/counters.h"

#include <unordered_map>

#include "backend.h"

namespace planner::rt {

namespace {
thread_local HostCounters tls_counters;
thread_local std::unordered_map<const void*, const void*> tls_mirrors;
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

void register_host_mirror(const void* device, const void* host) {
  tls_mirrors[device] = host;
}

const void* host_mirror(const void* device) {
  auto it = tls_mirrors.find(device);
  return it == tls_mirrors.end() ? nullptr : it->second;
}

void clear_host_mirrors() {
  tls_mirrors.clear();
}

}  // namespace detail

}  // namespace planner::rt
