// The executor's stream plan (planner_rt/executor.h): kernels on the compute stream,
// communication on its own, and every cross-stream conflict — a read of what the other stream
// wrote, a write over arena bytes the other stream read or wrote (the memory plan reuses them)
// — ordered by a wait, checked against every pair of steps of synthetic programs.
#include <doctest/doctest.h>

#include "planner_rt/executor.h"
#include "planner_rt/random.h"
#include "rt_test_util.h"

namespace rt = planner::rt;

namespace {

rt::BufferSpec buffer(int64_t offset, int64_t floats) {
  rt::BufferSpec b;
  b.shape = {floats};
  b.arena_offset = offset;
  return b;
}

rt::StepSpec step(rt::StepKind kind, std::vector<int> in, std::vector<int> out) {
  rt::StepSpec s;
  s.kind = kind;
  s.inputs = std::move(in);
  s.outputs = std::move(out);
  return s;
}

bool overlap(const rt::BufferSpec& a, const rt::BufferSpec& b) {
  const int64_t ae = a.arena_offset + a.shape[0] * 4, be = b.arena_offset + b.shape[0] * 4;
  return a.arena_offset < be && b.arena_offset < ae;
}

// Every conflicting pair (j < i) on different streams: i's stream has waited, at i or before,
// for a step of j's stream at or after j.
void check_covered(const rt::Program& p, const rt::StreamPlan& plan) {
  const auto& steps = p.steps[0];
  for (size_t i = 0; i < steps.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      if (plan.stream[i] == plan.stream[j]) continue;
      bool conflict = false;
      auto touches = [&](const std::vector<int>& xs, const std::vector<int>& ys) {
        for (int x : xs)
          for (int y : ys)
            if (x >= 0 && y >= 0 &&
                overlap(p.buffers[static_cast<size_t>(x)], p.buffers[static_cast<size_t>(y)]))
              return true;
        return false;
      };
      conflict = touches(steps[i].inputs, steps[j].outputs) ||
                 touches(steps[i].outputs, steps[j].outputs) ||
                 touches(steps[i].outputs, steps[j].inputs);
      if (!conflict) continue;
      int seen = -1;
      for (size_t k = 0; k <= i; ++k)
        if (plan.stream[k] == plan.stream[i]) seen = std::max(seen, plan.wait_for[k]);
      CAPTURE(i);
      CAPTURE(j);
      CHECK(seen >= static_cast<int>(j));
      if (plan.wait_for[i] >= 0) CHECK(plan.signals[static_cast<size_t>(plan.wait_for[i])]);
    }
}

}  // namespace

TEST_CASE("a gradient all-reduce overlaps the next kernel; reuse of its bytes waits for it") {
  rt::Program p;
  p.num_ranks = 1;
  p.arena_bytes = {4096};
  // b0 gradient [0, 400), b1 reduced in place (same bytes), b2 activation [512, 912),
  // b3 written later over b0's bytes (the memory plan reused them).
  p.buffers = {buffer(0, 100), buffer(0, 100), buffer(512, 100), buffer(0, 100)};
  p.steps = {{step(rt::StepKind::kKernel, {}, {0}), step(rt::StepKind::kAllReduce, {0}, {1}),
              step(rt::StepKind::kKernel, {}, {2}), step(rt::StepKind::kKernel, {1}, {3})}};
  const rt::StreamPlan plan = rt::plan_streams(p, 0);
  CHECK(plan.stream[1] == rt::StreamKind::kComm);
  CHECK(plan.wait_for[1] == 0);   // the all-reduce reads the gradient
  CHECK(plan.wait_for[2] == -1);  // the next kernel runs beside the all-reduce
  CHECK(plan.wait_for[3] == 1);   // reading the result waits for the all-reduce
  CHECK(plan.signals[0]);
  CHECK(plan.signals[1]);
  check_covered(p, plan);
}

TEST_CASE("random programs: every cross-stream conflict is ordered") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    rt::Program p;
    p.num_ranks = 1;
    p.arena_bytes = {1 << 16};
    std::vector<float> r(400);
    rt::Tensor view(rt::DType::kFloat32, {400}, r.data());
    rt::fill_uniform(view, seed, "program", 0, 1);
    size_t at = 0;
    auto next = [&] { return r[at++ % r.size()]; };
    for (int b = 0; b < 24; ++b)
      p.buffers.push_back(buffer(static_cast<int64_t>(next() * 60000) / 4 * 4,
                                 1 + static_cast<int64_t>(next() * 200)));
    std::vector<rt::StepSpec> steps;
    for (int i = 0; i < 40; ++i) {
      const auto kind = next() < 0.6 ? rt::StepKind::kKernel : rt::StepKind::kAllReduce;
      const int a = static_cast<int>(next() * 24), b = static_cast<int>(next() * 24);
      steps.push_back(step(kind, {a}, {b}));
    }
    p.steps = {steps};
    CAPTURE(seed);
    check_covered(p, rt::plan_streams(p, 0));
  }
}
