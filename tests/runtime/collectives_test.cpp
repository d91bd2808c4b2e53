// Shared-memory collectives with 2, 3, 4 and 8 rank threads, full groups and concurrent
// subgroups; mismatches and missing peers fail with an error instead of hanging.
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "planner_rt/collectives.h"
#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::Communicator;
using planner::rt::CpuWorld;
using planner::rt::Error;
using planner::rt::ReduceOp;

namespace {

// Runs body(comm) on n rank threads; returns the error messages (one per rank, "" if none).
std::vector<std::string> on_ranks(int n, const std::function<void(Communicator&)>& body,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  CpuWorld world(n, timeout);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      Communicator comm(world, r);
      try {
        body(comm);
      } catch (const Error& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

// Rank r's value at element i: distinct per rank and element, exact in f32.
float val(int r, int64_t i) {
  return static_cast<float>(r * 100 + i) * 0.25f + 0.125f;
}

std::mutex check_mutex;  // doctest's CHECK is not thread-safe
#define TCHECK(...)                                 \
  do {                                              \
    std::lock_guard<std::mutex> _lock(check_mutex); \
    CHECK(__VA_ARGS__);                             \
  } while (0)

}  // namespace

TEST_CASE("all_reduce sum, max, min, prod over full groups") {
  for (int n : {2, 3, 4, 8}) {
    auto errs = on_ranks(n, [&](Communicator& c) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kProd}) {
        Buf in = Z({2, 3}), out = Z({2, 3});
        for (int64_t i = 0; i < 6; ++i)
          in.f()[i] = op == ReduceOp::kProd ? 1.0f + 0.01f * static_cast<float>(c.rank() + i)
                                            : val(c.rank(), i);
        c.all_reduce(in.t, out.t, op);
        for (int64_t i = 0; i < 6; ++i) {
          float ref = op == ReduceOp::kProd ? 1.0f + 0.01f * static_cast<float>(i) : val(0, i);
          for (int r = 1; r < n; ++r) {
            float v = op == ReduceOp::kProd ? 1.0f + 0.01f * static_cast<float>(r + i) : val(r, i);
            ref = op == ReduceOp::kSum   ? ref + v
                  : op == ReduceOp::kMax ? std::max(ref, v)
                  : op == ReduceOp::kMin ? std::min(ref, v)
                                         : ref * v;
          }
          TCHECK(out.f()[i] == ref);  // bit-exact: folded in rank order
        }
      }
      // in place, i64
      Buf iv(DType::kInt64, {4});
      for (int64_t i = 0; i < 4; ++i) iv.t.as<int64_t>()[i] = c.rank() + i;
      c.all_reduce(iv.t, iv.t, ReduceOp::kSum);
      TCHECK(iv.t.as<int64_t>()[1] == n * (n - 1) / 2 + n);
    });
    for (const auto& e : errs) CHECK(e == "");
  }
}

TEST_CASE("all_gather (equal and unequal pieces), reduce_scatter, all_to_all, broadcast") {
  for (int n : {2, 3, 4, 8}) {
    INFO(n << " ranks");
    auto errs = on_ranks(n, [&](Communicator& c) {
      const int r = c.rank();
      // unequal pieces along axis 1: rank r holds r+1 columns
      Buf in = Z({2, r + 1});
      for (int64_t i = 0; i < in.n(); ++i) in.f()[i] = val(r, i);
      const int64_t total = n * (n + 1) / 2;
      Buf out = Z({2, total});
      c.all_gather(in.t, out.t, 1);
      int64_t col = 0;
      for (int q = 0; q < n; ++q) {
        for (int64_t row = 0; row < 2; ++row)
          for (int64_t k = 0; k <= q; ++k)
            TCHECK(out.f()[row * total + col + k] == val(q, row * (q + 1) + k));
        col += q + 1;
      }
      // reduce_scatter with unequal pieces along axis 0: rank r gets r+1 rows
      Buf full = Z({total, 2}), mine = Z({r + 1, 2});
      for (int64_t i = 0; i < full.n(); ++i) full.f()[i] = val(r, i);
      c.reduce_scatter(full.t, mine.t, 0, ReduceOp::kSum);
      const int64_t first_row = static_cast<int64_t>(r) * (r + 1) / 2;
      for (int64_t i = 0; i < mine.n(); ++i) {
        float ref = val(0, first_row * 2 + i);
        for (int q = 1; q < n; ++q) ref += val(q, first_row * 2 + i);
        TCHECK(mine.f()[i] == ref);
      }
      // all_to_all: split axis 0 (n pieces of 2 rows), concatenate along axis 1
      Buf a = Z({2 * n, 3}), b = Z({2, 3 * n});
      for (int64_t i = 0; i < a.n(); ++i) a.f()[i] = val(r, i);
      c.all_to_all(a.t, b.t, 0, 1);
      for (int q = 0; q < n; ++q)
        for (int64_t row = 0; row < 2; ++row)
          for (int64_t k = 0; k < 3; ++k)
            TCHECK(b.f()[row * 3 * n + q * 3 + k] == val(q, (r * 2 + row) * 3 + k));
      // broadcast from the last rank
      Buf t = Z({5});
      for (int64_t i = 0; i < 5; ++i) t.f()[i] = val(r, i);
      c.broadcast(t.t, n - 1);
      for (int64_t i = 0; i < 5; ++i) TCHECK(t.f()[i] == val(n - 1, i));
      c.barrier();
    });
    for (const auto& e : errs) CHECK(e == "");
  }
}

TEST_CASE("concurrent collectives in different subgroups") {
  auto errs = on_ranks(8, [&](Communicator& c) {
    const int r = c.rank();
    std::vector<int> half = r < 4 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{4, 5, 6, 7};
    std::vector<int> parity = r % 2 ? std::vector<int>{1, 3, 5, 7} : std::vector<int>{0, 2, 4, 6};
    const int mate = r ^ 1;
    std::vector<int> pair = {std::min(r, mate), std::max(r, mate)};
    for (int iter = 0; iter < 20; ++iter) {
      Buf in = F({1}, {static_cast<float>(r + iter)}), out = Z({1});
      c.all_reduce(in.t, out.t, ReduceOp::kSum, half);
      const float hsum = r < 4 ? 6.0f : 22.0f;
      TCHECK(out.f()[0] == hsum + 4.0f * static_cast<float>(iter));
      c.all_reduce(in.t, out.t, ReduceOp::kMax, parity);
      TCHECK(out.f()[0] == static_cast<float>((r % 2 ? 7 : 6) + iter));
      Buf g = Z({2});
      c.all_gather(in.t, g.t, 0, pair);
      TCHECK(g.f()[0] == static_cast<float>(pair[0] + iter));
      TCHECK(g.f()[1] == static_cast<float>(pair[1] + iter));
    }
  });
  for (const auto& e : errs) CHECK(e == "");
}

TEST_CASE("send and recv by peer and tag") {
  for (int n : {2, 3, 4, 8}) {
    auto errs = on_ranks(n, [&](Communicator& c) {
      const int r = c.rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
      Buf a = F({2}, {static_cast<float>(r), 1}), b = F({2}, {static_cast<float>(r), 2});
      c.send(b.t, next, 2);  // buffered: sending first on every rank cannot deadlock
      c.send(a.t, next, 1);
      Buf ra = Z({2}), rb = Z({2});
      c.recv(ra.t, prev, 1);
      c.recv(rb.t, prev, 2);
      TCHECK(ra.f()[0] == static_cast<float>(prev));
      TCHECK(ra.f()[1] == 1);
      TCHECK(rb.f()[1] == 2);
    });
    for (const auto& e : errs) CHECK(e == "");
  }
}

TEST_CASE("mismatched or missing peers give an error, not a hang") {
  using namespace std::chrono_literals;
  SUBCASE("different sizes") {
    auto errs = on_ranks(
        2,
        [&](Communicator& c) {
          Buf in = Z({c.rank() == 0 ? 3 : 4}), out = Z({c.rank() == 0 ? 3 : 4});
          c.all_reduce(in.t, out.t, ReduceOp::kSum);
        },
        2000ms);
    CHECK(errs[0].find("all_reduce over group [0,1] (call 1): shapes differ") != std::string::npos);
    CHECK(errs[1].find("shapes differ") != std::string::npos);
  }
  SUBCASE("different operations") {
    auto errs = on_ranks(
        2,
        [&](Communicator& c) {
          Buf in = Z({2}), out = Z({2});
          if (c.rank() == 0)
            c.all_reduce(in.t, out.t, ReduceOp::kSum);
          else
            c.broadcast(in.t, 0);
        },
        2000ms);
    CHECK(errs[0].find("rank 1 called broadcast while rank 0 called all_reduce") !=
          std::string::npos);
    CHECK(errs[1] != "");
  }
  SUBCASE("a missing peer times out") {
    auto errs = on_ranks(
        3,
        [&](Communicator& c) {
          if (c.rank() == 2) return;
          c.barrier();
        },
        200ms);
    for (int r : {0, 1}) {
      CHECK(errs[static_cast<size_t>(r)].find("barrier over group [0,1,2] (call 1): timed out "
                                              "after 200 ms waiting for rank(s) 2") !=
            std::string::npos);
    }
    CHECK(errs[2] == "");
  }
  SUBCASE("recv without a send times out; wrong shape is refused") {
    auto errs = on_ranks(
        2,
        [&](Communicator& c) {
          Buf t = Z({3});
          if (c.rank() == 0) {
            c.send(Z({4}).t, 1, 0);
            return;
          }
          try {
            c.recv(t.t, 0, 0);
          } catch (const Error& e) {
            TCHECK(std::string(e.what()).find("message is f32[4], expected f32[3]") !=
                   std::string::npos);
          }
          c.recv(t.t, 0, 7);
        },
        200ms);
    CHECK(errs[1].find("rank 1: recv from rank 0 tag 7: timed out") != std::string::npos);
  }
  SUBCASE("bad groups") {
    auto errs = on_ranks(
        2,
        [&](Communicator& c) {
          Buf t = Z({1});
          c.all_reduce(t.t, t.t, ReduceOp::kSum, {c.rank() == 0 ? 1 : 0, 5});
        },
        200ms);
    CHECK(errs[0].find("ranks must lie in [0, 2)") != std::string::npos);
  }
}
