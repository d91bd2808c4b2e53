// Tests for the basic partition strategies found by interval analysis (analysis/strategies.h).
#include "analysis/strategies.h"

#include <string>

#include "tdl/parser.h"
#include "tests/test_util.h"

namespace planner::analysis {
namespace {

using tdl::InstanceInput;
using tdl::InstanceOutput;
using tdl::InstanceRequest;

tdl::File parse_ok(const std::string& text) {
  auto file = tdl::parse_file(text, "t.tdl");
  REQUIRE_MESSAGE(file.has_value(), (file ? std::string() : file.error().message()));
  return std::move(*file);
}

// Standalone instance of the first definition in `text`, with the given sizes.
tdl::Instance standalone(const std::string& text,
                         const std::map<std::string, int64_t>& sizes = {}) {
  tdl::File file = parse_ok(text);
  auto inst = tdl::instantiate_standalone(file.ops[0], sizes);
  REQUIRE_MESSAGE(inst.has_value(), (inst ? std::string() : inst.error().message()));
  return std::move(*inst);
}

tdl::Instance for_node(const std::string& text, const std::string& op_type,
                       std::vector<std::vector<int64_t>> inputs,
                       std::vector<std::vector<int64_t>> outputs,
                       std::map<std::string, tdl::AttrValue> attrs = {}) {
  tdl::File file = parse_ok(text);
  InstanceRequest req;
  req.op_type = op_type;
  req.node_name = "n";
  req.attributes = std::move(attrs);
  for (auto& s : inputs) req.inputs.push_back(InstanceInput{true, std::move(s), std::nullopt});
  for (auto& s : outputs) req.outputs.push_back(InstanceOutput{true, std::move(s)});
  std::vector<const tdl::OpDef*> variants;
  for (const auto& op : file.ops)
    if (op.op_type == op_type) variants.push_back(&op);
  auto inst = tdl::instantiate(variants, req, file.source.get());
  REQUIRE_MESSAGE(inst.has_value(), (inst ? std::string() : inst.error().message()));
  return std::move(*inst);
}

OpAnalysis analyze_ok(const tdl::Instance& inst) {
  auto a = analyze(inst);
  REQUIRE_MESSAGE(a.has_value(), (a ? std::string() : a.error().message()));
  return std::move(*a);
}

// "worker0 | worker1" for input `i` of strategy `var`.
std::string input_regions(const OpAnalysis& a, const std::string& var, size_t i) {
  const Strategy* s = a.find(var);
  REQUIRE_MESSAGE(s != nullptr, var);
  return s->input_regions.at(i)[0].to_string() + " | " + s->input_regions.at(i)[1].to_string();
}

std::string output_regions(const OpAnalysis& a, const std::string& var, size_t o = 0) {
  const Strategy* s = a.find(var);
  REQUIRE_MESSAGE(s != nullptr, var);
  return s->output_regions.at(o)[0].to_string() + " | " + s->output_regions.at(o)[1].to_string();
}

std::string vars_of(const OpAnalysis& a) {
  std::string out;
  for (const auto& s : a.strategies) out += (out.empty() ? "" : " ") + s.var;
  return out;
}

constexpr const char* kConv1d =
    "op Conv1d(data[B, CI, X], filters[CI, CO, DX]) -> out[b, co, x] =\n"
    "    sum(ci, dx: data[b, ci, x + dx] * filters[ci, co, dx])\n";

TEST_CASE("ShiftTwo with N = 12: i covers 0..9, workers need A[2..6] and A[7..11]") {
  OpAnalysis a = analyze_ok(standalone("op ShiftTwo(A[N]) -> B[i] = A[i + 2]\n", {{"N", 12}}));
  CHECK(a.extent("i") == Affine(10));
  REQUIRE(a.strategies.size() == 1);
  CHECK(output_regions(a, "i") == "[0..4] | [5..9]");
  CHECK(input_regions(a, "i", 0) == "[2..6] | [7..11]");
  CHECK(a.strategies[0].kind == Strategy::Kind::kOutput);
  CHECK_FALSE(a.strategies[0].output_reduction);
  CHECK_FALSE(a.elementwise);
}

TEST_CASE("ShiftTwo symbolically: Tofu's half intervals") {
  OpAnalysis a = analyze_ok(standalone("op ShiftTwo(A[N]) -> B[i] = A[i + 2]\n"));
  CHECK(a.symbolic);
  CHECK(a.extent("i").to_string() == "N - 2");
  CHECK(output_regions(a, "i") == "[0..N/2 - 2] | [N/2 - 1..N - 3]");
  CHECK(input_regions(a, "i", 0) == "[2..N/2] | [N/2 + 1..N - 1]");
}

TEST_CASE("Conv1d: split x has a halo, split ci reduces, split b replicates the filters") {
  OpAnalysis a =
      analyze_ok(standalone(kConv1d, {{"B", 8}, {"CI", 4}, {"X", 32}, {"CO", 16}, {"DX", 3}}));
  CHECK(vars_of(a) == "b co x ci dx");
  CHECK(a.extent("x") == Affine(30));
  // Split along x: worker 0 computes x 0..14 and needs data's x 0..16; worker 1 15..29 / 15..31.
  CHECK(output_regions(a, "x") == "[0..7, 0..15, 0..14] | [0..7, 0..15, 15..29]");
  CHECK(input_regions(a, "x", 0) == "[0..7, 0..3, 0..16] | [0..7, 0..3, 15..31]");
  CHECK(input_regions(a, "x", 1) == "[0..3, 0..15, 0..2] | [0..3, 0..15, 0..2]");
  CHECK(a.find("x")->replicated == std::vector<bool>{false, true});
  CHECK_FALSE(a.find("x")->output_reduction);
  // Split along ci: half of data (dimension 1), half of filters (dimension 0), output reduction.
  const Strategy* ci = a.find("ci");
  REQUIRE(ci);
  CHECK(ci->kind == Strategy::Kind::kReduction);
  CHECK(input_regions(a, "ci", 0) == "[0..7, 0..1, 0..31] | [0..7, 2..3, 0..31]");
  CHECK(input_regions(a, "ci", 1) == "[0..1, 0..15, 0..2] | [2..3, 0..15, 0..2]");
  CHECK(output_regions(a, "ci") == "[0..7, 0..15, 0..29] | [0..7, 0..15, 0..29]");
  REQUIRE(ci->output_reduction);
  CHECK(*ci->output_reduction == Reducer::kSum);
  CHECK(ci->reduced_outputs == std::vector<bool>{true});
  CHECK(ci->replicated == std::vector<bool>{false, false});
  // Split along b: half of data, all of filters.
  CHECK(input_regions(a, "b", 0) == "[0..3, 0..3, 0..31] | [4..7, 0..3, 0..31]");
  CHECK(input_regions(a, "b", 1) == "[0..3, 0..15, 0..2] | [0..3, 0..15, 0..2]");
  CHECK(a.find("b")->replicated == std::vector<bool>{false, true});
  // Split along dx: worker 0 takes dx 0..1, worker 1 dx 2..2; data overlaps by the window.
  CHECK(input_regions(a, "dx", 0) == "[0..7, 0..3, 0..30] | [0..7, 0..3, 2..31]");
}

TEST_CASE("Conv1d symbolically") {
  OpAnalysis a = analyze_ok(standalone(kConv1d));
  CHECK(a.extent("x").to_string() == "X - DX + 1");
  CHECK(input_regions(a, "b", 0) ==
        "[0..B/2 - 1, 0..CI - 1, 0..X - 1] | [B/2..B - 1, 0..CI - 1, 0..X - 1]");
  CHECK(input_regions(a, "ci", 1) ==
        "[0..CI/2 - 1, 0..CO - 1, 0..DX - 1] | [CI/2..CI - 1, 0..CO - 1, 0..DX - 1]");
}

TEST_CASE("MatMul has exactly three basic strategies") {
  OpAnalysis a =
      analyze_ok(standalone("op MatMul(A[M, K], B[K, N]) -> C[m, n] = sum(k: A[m, k] * B[k, n])\n",
                            {{"M", 6}, {"K", 4}, {"N", 10}}));
  REQUIRE(a.strategies.size() == 3);
  CHECK(vars_of(a) == "m n k");
  CHECK(input_regions(a, "m", 0) == "[0..2, 0..3] | [3..5, 0..3]");
  CHECK(input_regions(a, "m", 1) == "[0..3, 0..9] | [0..3, 0..9]");
  CHECK(a.find("m")->replicated == std::vector<bool>{false, true});
  CHECK(input_regions(a, "n", 0) == "[0..5, 0..3] | [0..5, 0..3]");
  CHECK(input_regions(a, "n", 1) == "[0..3, 0..4] | [0..3, 5..9]");
  CHECK(a.find("n")->replicated == std::vector<bool>{true, false});
  CHECK(input_regions(a, "k", 0) == "[0..5, 0..1] | [0..5, 2..3]");
  CHECK(input_regions(a, "k", 1) == "[0..1, 0..9] | [2..3, 0..9]");
  CHECK(a.find("k")->output_reduction == Reducer::kSum);
  CHECK_FALSE(a.find("m")->output_reduction);
  CHECK_FALSE(a.find("n")->output_reduction);
}

TEST_CASE("odd extents give worker 0 the larger half; extent 1 is not splittable") {
  OpAnalysis a =
      analyze_ok(standalone("op Id(A[N, M]) -> B[i, j] = A[i, j]\n", {{"N", 7}, {"M", 1}}));
  CHECK(output_regions(a, "i") == "[0..3, 0..0] | [4..6, 0..0]");
  CHECK(a.find("i")->valid);
  CHECK_FALSE(a.find("j")->valid);
  CHECK(a.find("j")->invalid_reason == "extent 1");
  CHECK(a.elementwise);
}

TEST_CASE("element-wise operators are marked; broadcasting ones are not") {
  const char* add = "op Add(A[...], B[...]) -> C[...] = A[...] + B[...]\n";
  CHECK(analyze_ok(for_node(add, "Add", {{4, 5}, {4, 5}}, {{4, 5}})).elementwise);
  OpAnalysis b = analyze_ok(for_node(add, "Add", {{4, 5}, {5}}, {{4, 5}}));
  CHECK_FALSE(b.elementwise);
  // Broadcasting: B has no e0, so both workers need all of B when e0 is split.
  CHECK(input_regions(b, "e0", 1) == "[0..4] | [0..4]");
  CHECK(input_regions(b, "e1", 1) == "[0..2] | [3..4]");
  OpAnalysis c = analyze_ok(for_node(add, "Add", {{4, 5}, {4, 1}}, {{4, 5}}));
  CHECK(input_regions(c, "e1", 1) == "[0..3, 0..0] | [0..3, 0..0]");
  CHECK(input_regions(c, "e0", 1) == "[0..1, 0..0] | [2..3, 0..0]");
  CHECK_FALSE(
      analyze_ok(standalone(kConv1d, {{"B", 8}, {"CI", 4}, {"X", 32}, {"CO", 16}, {"DX", 3}}))
          .elementwise);
}

TEST_CASE("Conv2d with strides, pads and dilations: halo and padding clipped to the input") {
  const char* conv = R"(
op Conv<strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1>
    (X[N, C, H, W], Wt[M, C, KH, KW], Bias[M]?) ->
    Y[n, m, y : (H + pads[0] + pads[2] - dilations[0] * (KH - 1) - 1) / strides[0] + 1,
            x : (W + pads[1] + pads[3] - dilations[1] * (KW - 1) - 1) / strides[1] + 1] =
    sum(c, ky, kx: X[n, c, y * strides[0] + ky * dilations[0] - pads[0], x * strides[1] + kx * dilations[1] - pads[1]]
                   * Wt[m, c, ky, kx]) + Bias[m]
)";
  // 3x3 kernel, stride 2, pad 1, dilation 1 on 16x16: 8x8 output.
  tdl::Instance inst = for_node(
      conv, "Conv", {{2, 3, 16, 16}, {4, 3, 3, 3}, {4}}, {{2, 4, 8, 8}},
      {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  OpAnalysis a = analyze_ok(inst);
  CHECK(vars_of(a) == "n m y x");  // the bias keeps the reduction from being at the top
  // Rows: worker 0 y 0..3 reads rows -1..7, clipped to 0..7; worker 1 y 4..7 reads 7..15.
  CHECK(input_regions(a, "y", 0) == "[0..1, 0..2, 0..7, 0..15] | [0..1, 0..2, 7..15, 0..15]");
  CHECK(input_regions(a, "y", 1) == "[0..3, 0..2, 0..2, 0..2] | [0..3, 0..2, 0..2, 0..2]");
  CHECK(input_regions(a, "m", 2) == "[0..1] | [2..3]");
  // Dilation 2, no padding, stride 1 on 10 columns: a 3-tap kernel spans 5, 6 outputs.
  tdl::Instance dil = for_node(conv, "Conv", {{1, 1, 10, 10}, {1, 1, 3, 3}}, {{1, 1, 6, 6}},
                               {{"dilations", std::vector<int64_t>{2, 2}}});
  OpAnalysis d = analyze_ok(dil);
  CHECK(input_regions(d, "x", 0) == "[0..0, 0..0, 0..9, 0..6] | [0..0, 0..0, 0..9, 3..9]");
  // Without the (optional) bias the body is a sum at the top: its variables split too.
  CHECK(vars_of(d) == "n m y x c ky kx");
  CHECK(input_regions(d, "ky", 0) == "[0..0, 0..0, 0..7, 0..9] | [0..0, 0..0, 4..9, 0..9]");
  CHECK(d.find("ky")->output_reduction == Reducer::kSum);
  // Without a node, the explicit extent stays symbolic with the attributes substituted.
  tdl::File file = parse_ok(conv);
  auto alone = tdl::instantiate_standalone(file.ops[0]);
  REQUIRE(alone);
  OpAnalysis s = analyze_ok(*alone);
  CHECK(s.extent("y").to_string() == "H - KH + 1");
}

TEST_CASE("grouped and depthwise convolution") {
  const char* grouped = R"(
op GroupConv<group>(X[N, G * CG, L] as [N, G, CG, L], Wt[G * MG, CG, K] as [G, MG, CG, K])
    -> Y[n, g, mg, l] = sum(c, k: X[n, g, c, l + k] * Wt[g, mg, c, k])
)";
  // 2 groups of 3 channels in, 2 groups of 4 channels out; length 10, kernel 3.
  tdl::Instance inst = for_node(grouped, "GroupConv", {{1, 6, 10}, {8, 3, 3}}, {{1, 2, 4, 8}},
                                {{"group", int64_t{2}}});
  OpAnalysis a = analyze_ok(inst);
  // Splitting the group splits both the channels of X and the filters, in declared coordinates.
  CHECK(input_regions(a, "g", 0) == "[0..0, 0..2, 0..9] | [0..0, 3..5, 0..9]");
  CHECK(input_regions(a, "g", 1) == "[0..3, 0..2, 0..2] | [4..7, 0..2, 0..2]");
  const Strategy* g = a.find("g");
  CHECK(g->input_view_regions[0][1].to_string() == "[0..0, 1..1, 0..2, 0..9]");
  // Splitting the output channels within each group needs every input channel (a bounding range).
  CHECK(input_regions(a, "mg", 1) == "[0..5, 0..2, 0..2] | [2..7, 0..2, 0..2]");
  CHECK(input_regions(a, "mg", 0) == "[0..0, 0..5, 0..9] | [0..0, 0..5, 0..9]");
  // Depthwise: one channel per group; splitting channels splits input and filters alike.
  const char* depthwise =
      "op Depthwise(X[N, C, L], Wt[C, K]) -> Y[n, c, l] = sum(k: X[n, c, l + k] * Wt[c, k])\n";
  OpAnalysis d = analyze_ok(for_node(depthwise, "Depthwise", {{2, 8, 12}, {8, 3}}, {{2, 8, 10}}));
  CHECK(input_regions(d, "c", 0) == "[0..1, 0..3, 0..11] | [0..1, 4..7, 0..11]");
  CHECK(input_regions(d, "c", 1) == "[0..3, 0..2] | [4..7, 0..2]");
  CHECK(input_regions(d, "l", 0) == "[0..1, 0..7, 0..6] | [0..1, 0..7, 5..11]");
}

TEST_CASE("reshape uses concrete strides; concat clips each input") {
  const char* reshape = "op Reshape(data[...], shape[K]) -> reshaped[..o] = reshape(data)\n";
  OpAnalysis merge = analyze_ok(for_node(reshape, "Reshape", {{2, 12, 64}, {2}}, {{2, 768}}));
  CHECK(input_regions(merge, "o1", 0) == "[0..1, 0..5, 0..63] | [0..1, 6..11, 0..63]");
  CHECK(input_regions(merge, "o1", 1) == "empty | empty");
  OpAnalysis split = analyze_ok(for_node(reshape, "Reshape", {{2, 768}, {3}}, {{2, 12, 64}}));
  CHECK(input_regions(split, "o1", 0) == "[0..1, 0..383] | [0..1, 384..767]");
  // Splitting the inner dimension: each worker's reads span (a bounding range of) the row.
  CHECK(input_regions(split, "o2", 0) == "[0..1, 0..735] | [0..1, 32..767]");
  const char* concat = "op Concat<axis>(inputs*[...]) -> out[...] = concat(inputs, axis)\n";
  OpAnalysis c =
      analyze_ok(for_node(concat, "Concat", {{2, 3}, {2, 5}}, {{2, 8}}, {{"axis", int64_t{1}}}));
  CHECK(input_regions(c, "e1", 0) == "[0..1, 0..2] | empty");
  CHECK(input_regions(c, "e1", 1) == "[0..1, 0..0] | [0..1, 1..4]");
}

TEST_CASE("split outputs of different sizes each keep their own extents") {
  OpAnalysis a =
      analyze_ok(for_node("op Split<axis = 0>(input[...]) -> outputs*[...] = split(input, axis)\n",
                          "Split", {{8, 10}}, {{8, 2}, {8, 3}, {8, 5}}, {{"axis", int64_t{1}}}));
  CHECK(vars_of(a) == "e0 e1");
  CHECK(input_regions(a, "e0", 0) == "[0..3, 0..9] | [4..7, 0..9]");
  // Splitting the columns halves every output: worker 0 reads the first half of each part.
  CHECK(input_regions(a, "e1", 0) == "[0..7, 0..7] | [0..7, 1..9]");
  CHECK(output_regions(a, "e1", 2) == "[0..7, 0..2] | [0..7, 3..4]");
  CHECK(output_regions(a, "e1", 0) == "[0..7, 0..0] | [0..7, 1..1]");
}

TEST_CASE("max and other reducers; reductions not at the top cannot be split") {
  OpAnalysis a = analyze_ok(
      standalone("op RowMax(A[M, N]) -> B[i] = max(j: A[i, j])\n", {{"M", 4}, {"N", 6}}));
  CHECK(a.find("j")->output_reduction == Reducer::kMax);
  OpAnalysis s = analyze_ok(
      standalone("op Softmax(X[M, N]) -> Y[i, j] = exp(X[i, j]) / sum(k: exp(X[i, k]))\n",
                 {{"M", 4}, {"N", 6}}));
  CHECK(vars_of(s) == "i j");
  // Splitting j: each worker still needs the whole row for the normalising sum.
  CHECK(input_regions(s, "j", 0) == "[0..3, 0..5] | [0..3, 0..5]");
  CHECK(input_regions(s, "i", 0) == "[0..1, 0..5] | [2..3, 0..5]");
}

TEST_CASE("pooling windows with explicit reduction extents") {
  OpAnalysis a =
      analyze_ok(for_node("op Pool<kernel = [2], strides = [2]>(X[N, L]) -> Y[n, l] = max(k < "
                          "kernel[0]: X[n, l * strides[0] + k])\n",
                          "Pool", {{1, 9}}, {{1, 4}}));
  CHECK(a.extent("k") == Affine(2));
  CHECK(input_regions(a, "l", 0) == "[0..0, 0..3] | [0..0, 4..7]");
}

TEST_CASE("recurrences report the state each worker reads") {
  OpAnalysis a =
      analyze_ok(standalone("op Scan(X[S, B, H], R[H, H]) -> Y[s, b, h] = tanh(X[s, b, h] + sum(k: "
                            "R[h, k] * Y[s - 1, b, k]))\n",
                            {{"S", 5}, {"B", 4}, {"H", 8}}));
  const Strategy* h = a.find("h");
  REQUIRE(h);
  REQUIRE(h->state_regions[0]);
  // Each worker computes half of the hidden units but reads all of the previous step's.
  CHECK((*h->state_regions[0])[0].to_string() == "[0..3, 0..3, 0..7]");
  CHECK(input_regions(a, "h", 1) == "[0..3, 0..7] | [4..7, 0..7]");
  const Strategy* b = a.find("b");
  CHECK((*b->state_regions[0])[1].to_string() == "[0..3, 2..3, 0..7]");
  // Splitting the hidden units or the batch runs the workers side by side...
  CHECK(h->valid);
  CHECK(b->valid);
  // ...splitting the sequence would run them one after the other: not a parallel split.
  const Strategy* s = a.find("s");
  REQUIRE(s);
  CHECK_FALSE(s->valid);
  CHECK(s->invalid_reason == "sequential: output 0 reads itself along s (a recurrence)");
}

TEST_CASE("non-affine products and comparisons are errors naming the operator and expression") {
  // Symbolically, a size times an index variable is a product of two intervals.
  const char* flat = "op Flat(A[N, M], F[L]) -> B[i : N, j : M] = A[i, j] + F[i * M + j]\n";
  auto a = analyze(standalone(flat));
  REQUIRE_FALSE(a.has_value());
  CHECK(a.error().message() ==
        "Flat: operator '*' in index 'i * M' of 'F[i * M + j]': product of two intervals [0, N/2 - "
        "1] and [M, M] is "
        "not affine");
  // With the size known, the analysis uses its concrete value (a reshape's stride).
  OpAnalysis ok = analyze_ok(standalone(flat, {{"N", 2}, {"M", 3}, {"L", 6}}));
  CHECK(input_regions(ok, "i", 1) == "[0..2] | [3..5]");
  // The parser rejects comparisons in indices; an instance built by hand still fails cleanly.
  tdl::Instance by_hand = standalone("op Cmp(A[N]) -> C[i : N] = A[i]\n", {{"N", 4}});
  by_hand.bodies[0] =
      tdl::make_access("A", {tdl::make_binary("<", tdl::make_name("i"), tdl::make_name("N"))});
  auto cmp = analyze(by_hand);
  REQUIRE_FALSE(cmp.has_value());
  CHECK(cmp.error().message() ==
        "Cmp: operator '<' in index 'i < N' of 'A[i < N]': comparison of two intervals [0, 1] and "
        "[4, 4]");
}

TEST_CASE("Tofu's BatchCholesky: an opaque function splits along the batch only usefully") {
  OpAnalysis a =
      analyze_ok(standalone("op BatchCholesky(m[B, R, C]) -> out[b, i, j] = opaque(m[b, :, :])\n",
                            {{"B", 4}, {"R", 3}, {"C", 3}}));
  CHECK(vars_of(a) == "b i j");
  CHECK(input_regions(a, "b", 0) == "[0..1, 0..2, 0..2] | [2..3, 0..2, 0..2]");
  // i and j are not read by any access: their extents are the output's own sizes.
  CHECK(a.extent("i").to_string() == "out.1");
  CHECK(a.find("i")->replicated == std::vector<bool>{true});
}

TEST_CASE("a division by a size of unknown value takes the whole dimension") {
  OpAnalysis a = analyze_ok(standalone(
      "op G(X[N, C], W[CO, CG]) -> Y[n, co] = sum(ci: X[n, co / CO * CG + ci] * W[co, ci])\n"));
  CHECK(input_regions(a, "co", 0) == "[0..N - 1, 0..C - 1] | [0..N - 1, 0..C - 1]");
  CHECK(input_regions(a, "n", 0) == "[0..N/2 - 1, 0..C - 1] | [N/2..N - 1, 0..C - 1]");
}

TEST_CASE("text form") {
  OpAnalysis a = analyze_ok(standalone("op ShiftTwo(A[N]) -> B[i] = A[i + 2]\n", {{"N", 12}}));
  CHECK(to_string(a, standalone("op ShiftTwo(A[N]) -> B[i] = A[i + 2]\n", {{"N", 12}})) ==
        "extents: i = 10\n"
        "split i (output): 0..4 | 5..9\n"
        "  A: [2..6] | [7..11]\n"
        "  -> B: [0..4] | [5..9]\n");
}

}  // namespace
}  // namespace planner::analysis
