// A training step of a small MLP run whole on one rank and split over four rank threads
// (2-way data parallel x 2-way tensor parallel, Megatron-style): the updated weights agree.
// This is the comparison CI makes between a plan's launcher and the unpartitioned model.
#include <thread>

#include "planner_rt/collectives.h"
#include "planner_rt/profiler.h"
#include "rt_test_util.h"

using namespace rt_test;
using planner::rt::Allocator;
using planner::rt::Communicator;
using planner::rt::CpuWorld;
using planner::rt::fill_uniform;
using planner::rt::ReduceOp;
using planner::rt::TensorBuffer;

namespace {

constexpr int64_t kBatch = 8, kIn = 6, kHidden = 10, kOut = 4;
constexpr uint64_t kSeed = 2024;

struct Slice {
  int64_t batch0, batch, hidden0,
      hidden;  // which rows of the batch and columns of the hidden layer
};

// One step: Gemm(X, W1, b1) -> Relu -> MatMul(W2) -> Y; the backward ops the training graph
// emits; SGD. `tp` sums partial outputs over the tensor-parallel group, `dp` sums gradients
// over the data-parallel group (both may be empty for the whole model). Returns W1', b1', W2'.
std::vector<Buf> step(Allocator& alloc, const Slice& s, Communicator* comm,
                      const std::vector<int>& tp, const std::vector<int>& dp) {
  auto make = [&](Shape shape) { return TensorBuffer(alloc, DType::kFloat32, std::move(shape)); };
  TensorBuffer x = make({s.batch, kIn}), w1 = make({kIn, s.hidden}), b1 = make({s.hidden}),
               w2 = make({s.hidden, kOut}), dy = make({s.batch, kOut});
  fill_uniform(x.view(), kSeed, "input", {kBatch, kIn}, {s.batch0, 0});
  fill_uniform(w1.view(), kSeed, "w1", {kIn, kHidden}, {0, s.hidden0}, -0.5, 0.5);
  fill_uniform(b1.view(), kSeed, "b1", {kHidden}, {s.hidden0}, -0.5, 0.5);
  fill_uniform(w2.view(), kSeed, "w2", {kHidden, kOut}, {s.hidden0, 0}, -0.5, 0.5);
  fill_uniform(dy.view(), kSeed, "grad:y", {kBatch, kOut}, {s.batch0, 0});
  TensorBuffer a = make({s.batch, s.hidden}), h = make({s.batch, s.hidden}),
               y = make({s.batch, kOut});
  run("Gemm", {}, {x.view(), w1.view(), b1.view()}, {a.view()});
  run("Relu", {}, {a.view()}, {h.view()});
  run("MatMul", {}, {h.view(), w2.view()}, {y.view()});
  if (comm && !tp.empty()) comm->all_reduce(y.view(), y.view(), ReduceOp::kSum, tp);
  TensorBuffer dh = make({s.batch, s.hidden}), dw2 = make({s.hidden, kOut}),
               da = make({s.batch, s.hidden}), dw1 = make({kIn, s.hidden}), db1 = make({s.hidden});
  run("Gemm", {{"transB", int64_t{1}}}, {dy.view(), w2.view()}, {dh.view()});
  run("Gemm", {{"transA", int64_t{1}}}, {h.view(), dy.view()}, {dw2.view()});
  run_planner("UnaryGrad", {{"op", std::string("Relu")}}, {dh.view(), a.view(), h.view()},
              {da.view()});
  run("Gemm", {{"transA", int64_t{1}}}, {x.view(), da.view()}, {dw1.view()});
  Buf axes(DType::kInt64, {1});  // zero-filled: axis 0 (no doctest macros on rank threads)
  run("ReduceSum", {{"keepdims", int64_t{0}}}, {da.view(), axes.t}, {db1.view()});
  if (comm && !dp.empty())
    for (const TensorBuffer* g : {&dw1, &db1, &dw2})
      comm->all_reduce(g->view(), g->view(), ReduceOp::kSum, dp);
  std::vector<Buf> updated;
  for (auto [p, g] : {std::pair{&w1, &dw1}, {&b1, &db1}, {&w2, &dw2}}) {
    Buf out = Z(p->view().shape);
    run_planner("SGD", {{"lr", 0.1}}, {p->view(), g->view()}, {out.t});
    updated.push_back(out);
  }
  return updated;
}

}  // namespace

TEST_CASE("data x tensor parallel MLP step equals the single-rank step") {
  Allocator whole_alloc;
  std::vector<Buf> ref = step(whole_alloc, {0, kBatch, 0, kHidden}, nullptr, {}, {});
  CHECK(whole_alloc.current_bytes() == 0);
  CHECK(whole_alloc.peak_bytes() > 0);

  CpuWorld world(4, std::chrono::seconds(20));
  std::vector<std::vector<Buf>> gathered(4);
  std::vector<std::string> errors(4);
  std::vector<int64_t> peaks(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      try {
        Communicator comm(world, r);
        const int dp_rank = r / 2, tp_rank = r % 2;
        const std::vector<int> tp = {2 * dp_rank, 2 * dp_rank + 1}, dp = {tp_rank, tp_rank + 2};
        Allocator alloc;
        Slice s{dp_rank * kBatch / 2, kBatch / 2, tp_rank * kHidden / 2, kHidden / 2};
        std::vector<Buf> mine = step(alloc, s, &comm, tp, dp);
        // reassemble the tensor-parallel pieces: W1 and b1 by columns, W2 by rows
        Buf w1 = Z({kIn, kHidden}), b1 = Z({kHidden}), w2 = Z({kHidden, kOut});
        comm.all_gather(mine[0].t, w1.t, 1, tp);
        comm.all_gather(mine[1].t, b1.t, 0, tp);
        comm.all_gather(mine[2].t, w2.t, 0, tp);
        gathered[static_cast<size_t>(r)] = {w1, b1, w2};
        peaks[static_cast<size_t>(r)] = alloc.peak_bytes();
      } catch (const planner::rt::Error& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    CHECK(errors[static_cast<size_t>(r)] == "");
    REQUIRE(gathered[static_cast<size_t>(r)].size() == 3);
    for (size_t k = 0; k < 3; ++k)
      expect_close(gathered[static_cast<size_t>(r)][k].values(), ref[k].values(), 1e-6, 1e-5);
    CHECK(peaks[static_cast<size_t>(r)] <
          whole_alloc.peak_bytes());  // a quarter of the work, less memory
  }
}
