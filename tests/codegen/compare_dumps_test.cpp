// verify's comparison of a partitioned run with the reference (codegen::compare_dumps): the
// tolerance of optimizer state and of Adam-updated parameters.
#include <doctest/doctest.h>

#include <cstring>

#include "codegen/verify.h"
#include "codegen/verify_relu.h"

namespace cg = planner::codegen;

namespace {

cg::DumpedSlice slice(const std::string& name, std::vector<float> values) {
  cg::DumpedSlice s;
  s.name = name;
  s.global_shape = s.shape = {static_cast<int64_t>(values.size())};
  s.offset = {0};
  s.bytes.resize(values.size() * 4);
  std::memcpy(s.bytes.data(), values.data(), s.bytes.size());
  return s;
}

// A reference and a partitioned run of two parameters updated by Adam: "a" with a real
// gradient, "b" whose gradient is rounding alone (1e-9 against a's 1e-1).
struct Runs {
  std::vector<cg::DumpedSlice> ref, part;
  Runs(float a_change, float b_change, float b_m) {
    ref = {slice("a:updated", {-0.02f, 0.02f}),   slice("a:m:updated", {0.1f, -0.1f}),
           slice("a:v:updated", {0.01f, 0.01f}),  slice("b:updated", {0.02f, -0.02f}),
           slice("b:m:updated", {1e-9f, -1e-9f}), slice("b:v:updated", {1e-18f, 1e-18f})};
    part = ref;
    part[0] = slice("a:updated", {-0.02f + a_change, 0.02f});
    part[3] = slice("b:updated", {0.02f + b_change, -0.02f});
    part[4] = slice("b:m:updated", {b_m, -1e-9f});
  }
};

}  // namespace

TEST_CASE(
    "compare_dumps: an Adam update decided by rounding may turn; one with a gradient may not") {
  cg::Tolerance tol;         // fp32: atol 1e-4 of the tensor's largest value
  tol.adam_step = 0.01 * 2;  // lr 0.01, two steps
  // b's first moment flips sign (rounding alone): its update may move b by up to 2 lr steps.
  Runs flip(0, -0.039f, -1e-9f);
  CHECK(cg::compare_dumps(flip.part, flip.ref, tol).ok);
  // The same change of a, whose moment is well above rounding: caught.
  Runs wrong_a(-0.039f, 0, 1e-9f);
  cg::Comparison c = cg::compare_dumps(wrong_a.part, wrong_a.ref, tol);
  CHECK_FALSE(c.ok);
  CHECK(c.worst == "a:updated");
  // Without Adam's allowance the flip of b fails too.
  tol.adam_step = 0;
  CHECK_FALSE(cg::compare_dumps(flip.part, flip.ref, tol).ok);
}

TEST_CASE("compare_dumps: optimizer state is measured against the largest state of its kind") {
  cg::Tolerance tol;
  tol.adam_step = 0.02;
  // b's moment differs by 2e-9, far over 1e-4 of its own largest value (1e-9) but nothing
  // against a's moments (0.1): accepted.
  Runs noise(0, 0, 3e-9f);
  CHECK(cg::compare_dumps(noise.part, noise.ref, tol).ok);
  // A moment off by 1e-3 of the largest: caught.
  Runs wrong(0, 0, 1e-4f);
  cg::Comparison c = cg::compare_dumps(wrong.part, wrong.ref, tol);
  CHECK_FALSE(c.ok);
  CHECK(c.worst == "b:m:updated");
}

TEST_CASE("ReLU outputs of two runs: within the tolerance of each other, and not") {
  // Reference and partitioned runs of one ReLU: element 1 kept at 1e-7 in one, dropped in the
  // other (a dispute within the tolerance 1e-4 of the tensor's 2.0); element 3 kept at 0.5 in
  // one only (a real disagreement).
  std::vector<cg::DumpedSlice> ref = {slice("relu:h@1#0", {2.0f, 1e-7f, 0.0f, 0.5f})};
  std::vector<cg::DumpedSlice> part = {slice("relu:h@1#0", {2.0f, 0.0f, 0.0f, 0.5f})};
  cg::ReluDispute d = cg::compare_relu(part, ref, 1e-4);
  CHECK(d.elements == 1);
  CHECK(d.within);
  CHECK(d.tensor == "h");
  CHECK(d.largest == doctest::Approx(5e-8));
  part = {slice("relu:h@1#0", {2.0f, 0.0f, 0.0f, 0.0f})};
  d = cg::compare_relu(part, ref, 1e-4);
  CHECK(d.elements == 2);
  CHECK_FALSE(d.within);
  CHECK(d.largest == doctest::Approx(0.25));
  // A ReLU the partitioned run never observed.
  d = cg::compare_relu({}, ref, 1e-4);
  CHECK_FALSE(d.problem.empty());
  // Records are split from the outputs they were dumped with.
  std::vector<cg::DumpedSlice> dump = {slice("y", {1}), slice("relu:h@1#0", {1})};
  CHECK(cg::take_relu_records(dump).size() == 1);
  CHECK(dump.size() == 1);
}
