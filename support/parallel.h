// A small fixed pool of worker threads for loops whose iterations are independent: each
// iteration writes only its own slot, so results do not depend on the thread count or on
// scheduling (the planner's outputs are byte-identical at any --threads).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace planner {

class WorkerPool {
 public:
  /// `threads` workers in all, the calling thread included (1 or less: everything runs inline).
  /// When the system refuses a thread (a memory or process limit), the pool keeps the workers
  /// it got: fewer threads, the same results (size() says how many).
  explicit WorkerPool(int threads) {
    workers_.reserve(static_cast<size_t>(std::max(0, threads - 1)));
    for (int w = 1; w < threads; ++w) {
      try {
        workers_.emplace_back([this, w] { work(w); });
      } catch (const std::system_error&) {
        break;
      }
    }
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  /// Number of workers, the calling thread included.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(i, worker) for every i in [0, n), spread over the workers (worker is in
  /// [0, size())); returns when all calls have returned. The first exception a call throws is
  /// rethrown here once all have stopped. Not reentrant: fn must not call for_each.
  /// `worth_it` false runs everything on the calling thread (waking the workers costs more
  /// than a few tiny calls).
  void for_each(int n, const std::function<void(int, int)>& fn, bool worth_it = true) {
    if (n <= 0) return;
    if (workers_.empty() || n == 1 || !worth_it) {
      for (int i = 0; i < n; ++i) fn(i, 0);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
      count_ = n;
      next_.store(0);
      busy_ = static_cast<int>(workers_.size());
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    drain(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void drain(int worker) {
    for (int i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) {
      try {
        (*job_)(i, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
        next_.store(count_);
      }
    }
  }

  void work(int worker) {
    long seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain(worker);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--busy_ == 0) done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_{0};
  int busy_ = 0;
  long generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

/// The most workers a pool is asked for (--threads is bounded by it).
inline constexpr int kMaxThreads = 256;

/// The default worker count: the machine's hardware threads (at least 1, at most kMaxThreads).
inline int default_threads() {
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
}

}  // namespace planner
