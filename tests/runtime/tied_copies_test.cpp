// A tied embedding kept as two copies (analysis/tied_copies.h, for pipelined steps) computes
// what the tied step computes: a generated GPT, whose LM head reuses the token embedding, runs
// one Adam step on the runtime's kernels tied and with the head reading its own copy; the
// copy starts as the original, both take the summed gradient, and every output and updated
// tensor of the tied step is byte for byte the same, the copy's update equal to the original's.

#include <cstring>

#include "analysis/tied_copies.h"
#include "tests/generated_models.h"
#include "training_executor.h"

using namespace rt_test;

namespace {

an::TrainingGraph step(const ir::Graph& fwd, bool copies) {
  an::TrainingOptions options;
  options.optimizer = an::Optimizer::kAdam;
  options.sum_parameter_parts_once = true;  // as pipelined steps build it
  options.copy_tied_embeddings = copies;
  auto tg = an::build_training_graph(fwd, options, "tiny.onnx");
  REQUIRE_MESSAGE(tg.has_value(), (tg ? "" : tg.error().message()));
  return std::move(*tg);
}

bool same(const Buf& x, const Buf& y) {
  return x.t.bytes() == y.t.bytes() &&
         std::memcmp(x.t.data, y.t.data, static_cast<size_t>(x.t.bytes())) == 0;
}

}  // namespace

TEST_CASE("tied copies: the LM head's own copy of the embedding gives the tied step exactly") {
  const ir::Graph fwd =
      planner::testing::import_generated_gpt(planner::testing::tiny_gpt_shape(2, 0.1), 2);
  const an::TrainingGraph tied = step(fwd, false);
  const an::TrainingGraph copied = step(fwd, true);

  // One copy: the token embedding "wte", read by the head; its update reads the summed
  // gradient, as the original's does.
  const auto wte = copied.graph.find_tensor("wte");
  const auto copy = copied.graph.find_tensor("wte:copy");
  REQUIRE(wte.has_value());
  REQUIRE(copy.has_value());
  CHECK(an::copied_from(copied.graph, *copy) == *wte);
  CHECK(an::copied_from(copied.graph, *wte) == ir::kNoTensor);
  CHECK(copied.graph.tensor(*wte).consumers.size() == 2);   // the Gather and its update
  CHECK(copied.graph.tensor(*copy).consumers.size() == 3);  // the head, its input gradient, update
  std::vector<ir::TensorId> grads;
  for (ir::OpId c : copied.graph.tensor(*copy).consumers)
    if (copied.op_phase[static_cast<size_t>(c)] == an::Phase::kUpdate)
      grads.push_back(copied.graph.op(c).inputs[1]);
  for (ir::OpId c : copied.graph.tensor(*wte).consumers)
    if (copied.op_phase[static_cast<size_t>(c)] == an::Phase::kUpdate)
      grads.push_back(copied.graph.op(c).inputs[1]);
  REQUIRE(grads.size() == 2);
  CHECK(grads[0] == grads[1]);
  const ir::OpId sum = copied.graph.tensor(grads[0]).producer;
  CHECK(copied.graph.op(sum).op_type == "Sum");
  CHECK(copied.op_phase[static_cast<size_t>(sum)] == an::Phase::kUpdate);

  Executor a(tied), b(copied);
  // The copy starts as the original (the launcher draws it by the original's name).
  const Buf& from = b.bufs[static_cast<size_t>(*wte)];
  Buf& to = b.bufs[static_cast<size_t>(*copy)];
  REQUIRE(to.t.bytes() == from.t.bytes());
  std::memcpy(to.t.data, from.t.data, static_cast<size_t>(from.t.bytes()));
  a.run(false);
  b.run(false);
  CHECK(outputs_agree(a, b) > 20);
  for (const char* state : {"", ":m", ":v"}) {
    INFO(state);
    auto original = copied.graph.find_tensor(std::string("wte") + state + ":updated");
    auto twin = copied.graph.find_tensor(std::string("wte:copy") + state + ":updated");
    REQUIRE(original.has_value());
    REQUIRE(twin.has_value());
    CHECK(same(b.bufs[static_cast<size_t>(*original)], b.bufs[static_cast<size_t>(*twin)]));
  }
}
