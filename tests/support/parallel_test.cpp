// Tests for support/parallel.h: every index runs once, and a pool the system refuses threads to
// still works with fewer workers (never a deadlock or a crash).
#include "support/parallel.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <vector>

#include <doctest/doctest.h>

namespace planner {
namespace {

// Runs a pool of `threads` over 1000 indices; true when each index ran exactly once.
bool pool_covers_all(int threads) {
  WorkerPool pool(threads);
  std::vector<std::atomic<int>> hits(1000);
  pool.for_each(1000, [&](int i, int worker) {
    if (worker >= 0 && worker < pool.size()) hits[static_cast<size_t>(i)]++;
  });
  for (const auto& h : hits)
    if (h.load() != 1) return false;
  return true;
}

TEST_CASE("every index runs exactly once at any pool size") {
  CHECK(pool_covers_all(1));
  CHECK(pool_covers_all(4));
  CHECK(pool_covers_all(kMaxThreads));
  CHECK(default_threads() >= 1);
  CHECK(default_threads() <= kMaxThreads);
}

// The virtual memory the process maps now, in bytes (from /proc/self/statm).
long mapped_bytes() {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * sysconf(_SC_PAGESIZE);
}

TEST_CASE("a pool that cannot create its threads runs with fewer, and shuts down") {
  // In a child, so the address-space limit cannot hurt the test runner: room for a few 8 MiB
  // thread stacks, not for 2000.
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(mapped_bytes() + (64l << 20));
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    int size = 0;
    bool all = false;
    {
      WorkerPool pool(2000);
      size = pool.size();
      std::vector<int> hits(5000, 0);
      pool.for_each(5000, [&](int i, int) { hits[static_cast<size_t>(i)]++; });
      all = true;
      for (int h : hits) all = all && h == 1;
    }  // the destructor must join what was created, not wait for what never started
    _exit(!all ? 4 : size >= 2000 ? 5 : 0);
  }
  int status = 0;
  // A deadlocked child would hang here: ctest's timeout turns that into a failure.
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace planner
