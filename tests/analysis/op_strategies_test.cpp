// Tests for analysis/op_strategies.cpp: graph operators matched to the shipped descriptions,
// instantiated for their shapes and analysed, with caching and the replication fallback.
#include "analysis/op_strategies.h"

#include <chrono>
#include <filesystem>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "importers/onnx_import.h"
#include "tests/analysis/graph_builder.h"
#include "tests/test_util.h"

namespace planner::analysis {
namespace {

using testing::attr;
using testing::GraphBuilder;

const tdl::Library& library() {
  static const tdl::Library lib = [] {
    auto l = tdl::Library::builtin();
    REQUIRE_MESSAGE(l.has_value(), (l ? "" : l.error().message()));
    return std::move(*l);
  }();
  return lib;
}

const OpStrategies& strategies_of(StrategyCache& cache, const ir::Graph& g,
                                  const std::string& node) {
  auto id = g.find_op(node);
  REQUIRE(id.has_value());
  auto s = cache.strategies(g, *id);
  REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message()));
  return **s;
}

std::vector<std::string> vars(const OpStrategies& s) {
  std::vector<std::string> out;
  for (const Strategy& st : s.analysis->strategies) out.push_back(st.var);
  return out;
}

const Strategy& strategy(const OpStrategies& s, const std::string& var) {
  const Strategy* st = s.analysis->find(var);
  REQUIRE_MESSAGE(st != nullptr, "no strategy splits " << var);
  return *st;
}

// The region worker `w` reads of instance input `input` (by name), as text.
std::string region(const OpStrategies& s, const Strategy& st, const std::string& input, int w) {
  int i = s.instance->find_input(input);
  REQUIRE_MESSAGE(i >= 0, "no input " << input);
  return st.input_regions[static_cast<size_t>(i)][static_cast<size_t>(w)].to_string();
}

TEST_CASE("MatMul: exactly three strategies, m and n split the output, k reduces") {
  ir::Graph g = GraphBuilder()
                    .input("x", {32, 784})
                    .param("w", {784, 512})
                    .op("fc", "MatMul", {"x", "w"}, {{"y", {32, 512}}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "fc");
  CHECK_FALSE(s.replicated);
  CHECK(s.num_strategies() == 3);
  CHECK(vars(s) == std::vector<std::string>{"m", "n", "k"});
  const Strategy& m = strategy(s, "m");
  CHECK(m.kind == Strategy::Kind::kOutput);
  CHECK(region(s, m, "A", 0) == "[0..15, 0..783]");
  CHECK(region(s, m, "B", 1) == "[0..783, 0..511]");
  const Strategy& k = strategy(s, "k");
  CHECK(k.kind == Strategy::Kind::kReduction);
  REQUIRE(k.output_reduction.has_value());
  CHECK(*k.output_reduction == Reducer::kSum);
  CHECK(region(s, k, "A", 1) == "[0..31, 392..783]");
  CHECK(region(s, k, "B", 1) == "[392..783, 0..511]");
  CHECK_FALSE(s.analysis->elementwise);
}

TEST_CASE("batched MatMul broadcasts the batch dimensions") {
  // [8, 1, 128, 64] x [12, 64, 32]: the batch dims broadcast to [8, 12].
  ir::Graph g = GraphBuilder()
                    .input("a", {8, 1, 128, 64})
                    .input("b", {12, 64, 32})
                    .op("bmm", "MatMul", {"a", "b"}, {{"c", {8, 12, 128, 32}}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "bmm");
  CHECK(s.num_strategies() == 5);  // two batch dims, m, n, k
  const auto& out_vars = s.analysis->output_vars;
  REQUIRE(out_vars.size() == 4);
  // Splitting the first batch dim: A is split, B (which lacks that dim) is read whole.
  const Strategy& b0 = strategy(s, out_vars[0]);
  CHECK(region(s, b0, "A", 1) == "[4..7, 0..0, 0..127, 0..63]");
  CHECK(region(s, b0, "B", 0) == "[0..11, 0..63, 0..31]");
  // Splitting the second: A's size-1 dim is broadcast (both read index 0), B is split.
  const Strategy& b1 = strategy(s, out_vars[1]);
  CHECK(region(s, b1, "A", 0) == "[0..7, 0..0, 0..127, 0..63]");
  CHECK(region(s, b1, "B", 1) == "[6..11, 0..63, 0..31]");
}

TEST_CASE("Conv2d with pads and strides: a spatial split reads a halo") {
  // 32x32 input, 3x3 kernel, stride 2, pad 1: 16x16 output.
  ir::Graph g = GraphBuilder()
                    .input("x", {4, 3, 32, 32})
                    .param("w", {8, 3, 3, 3})
                    .param("b", {8})
                    .op("conv", "Conv", {"x", "w", "b"}, {{"y", {4, 8, 16, 16}}},
                        {{"pads", attr({1, 1, 1, 1})}, {"strides", attr({2, 2})}})
                    .op("conv_nb", "Conv", {"x", "w"}, {{"z", {4, 8, 16, 16}}},
                        {{"pads", attr({1, 1, 1, 1})}, {"strides", attr({2, 2})}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "conv");
  CHECK(vars(s) == std::vector<std::string>{"n", "co", "o1", "o2", "ci", "k1", "k2"});
  const Strategy& rows = strategy(s, "o1");
  // Worker 0 computes rows 0..7: reads rows -1..15, clipped to 0..15 (the top row is padding);
  // worker 1 computes rows 8..15: reads rows 15..31. Row 15 is the halo both read.
  CHECK(region(s, rows, "X", 0) == "[0..3, 0..2, 0..15, 0..31]");
  CHECK(region(s, rows, "X", 1) == "[0..3, 0..2, 15..31, 0..31]");
  CHECK(region(s, rows, "W", 0) == "[0..7, 0..2, 0..2, 0..2]");
  const Strategy& co = strategy(s, "co");
  CHECK(region(s, co, "B", 1) == "[4..7]");
  CHECK(region(s, co, "W", 1) == "[4..7, 0..2, 0..2, 0..2]");
  // With or without the bias, the input channels and the window reduce too.
  const OpStrategies& nb = strategies_of(cache, g, "conv_nb");
  CHECK(vars(nb) == std::vector<std::string>{"n", "co", "o1", "o2", "ci", "k1", "k2"});
  const Strategy& ci = strategy(nb, "ci");
  CHECK(ci.kind == Strategy::Kind::kReduction);
  CHECK(region(nb, ci, "X", 1) == "[0..3, 2..2, 0..31, 0..31]");
  CHECK(region(nb, ci, "W", 0) == "[0..7, 0..1, 0..2, 0..2]");
}

TEST_CASE("depthwise Conv: an output-channel split reads only its groups' input channels") {
  ir::Graph g = GraphBuilder()
                    .input("x", {2, 16, 8, 8})
                    .param("w", {16, 1, 3, 3})
                    .op("dw", "Conv", {"x", "w"}, {{"y", {2, 16, 8, 8}}},
                        {{"pads", attr({1, 1, 1, 1})}, {"group", attr(int64_t{16})}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "dw");
  const Strategy& co = strategy(s, "co");
  CHECK(region(s, co, "X", 0) == "[0..1, 0..7, 0..7, 0..7]");
  CHECK(region(s, co, "X", 1) == "[0..1, 8..15, 0..7, 0..7]");
}

TEST_CASE("Reshape [8,128,768] -> [8,128,12,64]: a split of the 12 heads flows to the 768 dim") {
  ir::Graph g = GraphBuilder()
                    .input("x", {8, 128, 768})
                    .constant("shape", {8, 128, 12, 64})
                    .op("rs", "Reshape", {"x", "shape"}, {{"y", {8, 128, 12, 64}}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "rs");
  const auto& out_vars = s.analysis->output_vars;
  REQUIRE(out_vars.size() == 4);
  const Strategy& heads = strategy(s, out_vars[2]);
  CHECK(region(s, heads, "data", 0) == "[0..7, 0..127, 0..383]");
  CHECK(region(s, heads, "data", 1) == "[0..7, 0..127, 384..767]");
  const Strategy& batch = strategy(s, out_vars[0]);
  CHECK(region(s, batch, "data", 1) == "[4..7, 0..127, 0..767]");
}

TEST_CASE("Transpose: an output split reads the permuted input dimension") {
  ir::Graph g =
      GraphBuilder()
          .input("x", {8, 128, 12, 64})
          .op("tr", "Transpose", {"x"}, {{"y", {8, 12, 128, 64}}}, {{"perm", attr({0, 2, 1, 3})}})
          .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "tr");
  const auto& out_vars = s.analysis->output_vars;
  REQUIRE(out_vars.size() == 4);
  const Strategy& heads = strategy(s, out_vars[1]);  // output dim 1 is input dim 2
  CHECK(region(s, heads, "data", 1) == "[0..7, 0..127, 6..11, 0..63]");
}

TEST_CASE("Softmax on the last axis: splitting that axis needs the whole axis on each worker") {
  ir::Graph g =
      GraphBuilder()
          .input("x", {8, 12, 128, 128})
          .op("sm", "Softmax", {"x"}, {{"y", {8, 12, 128, 128}}}, {{"axis", attr(int64_t{-1})}})
          .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "sm");
  // Only output variables: the normaliser's sum is not at the top of the body, so it gives no
  // reduction strategy (partial softmaxes cannot be summed).
  CHECK(s.analysis->strategies.size() == 4);
  for (const Strategy& st : s.analysis->strategies) CHECK(st.kind == Strategy::Kind::kOutput);
  const Strategy& last = strategy(s, "n");
  CHECK(region(s, last, "input", 0) == "[0..7, 0..11, 0..127, 0..127]");
  CHECK(last.replicated[0]);
  const Strategy& rows = strategy(s, s.analysis->output_vars[2]);
  CHECK(region(s, rows, "input", 1) == "[0..7, 0..11, 64..127, 0..127]");
}

TEST_CASE("LSTM (fused): splits along batch and hidden; a hidden split exchanges the state") {
  ir::Graph g = GraphBuilder()
                    .input("x", {20, 32, 256})
                    .param("W", {1, 4 * 128, 256})
                    .param("R", {1, 4 * 128, 128})
                    .param("B", {1, 8 * 128})
                    .input("h0", {1, 32, 128})
                    .input("c0", {1, 32, 128})
                    .op("lstm", "LSTM", {"x", "W", "R", "B", "", "h0", "c0"},
                        {{"Y", {20, 1, 32, 128}}, {"Y_h", {1, 32, 128}}, {"Y_c", {1, 32, 128}}},
                        {{"hidden_size", attr(int64_t{128})}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "lstm");
  const Strategy& batch = strategy(s, "n");
  CHECK(region(s, batch, "X", 1) == "[0..19, 16..31, 0..255]");
  CHECK(batch.replicated[static_cast<size_t>(s.instance->find_input("W"))]);
  const Strategy& hidden = strategy(s, "h");
  // W is [1, 512, 256] viewed as [1, 4, 128, 256]: worker 1 reads rows 64..127 of every gate.
  int w = s.instance->find_input("W");
  CHECK(hidden.input_view_regions[static_cast<size_t>(w)][1].to_string() ==
        "[0..0, 0..3, 64..127, 0..255]");
  CHECK(region(s, hidden, "X", 0) == "[0..19, 0..31, 0..255]");
  // The recurrence: each step reads the whole previous hidden state, so the two halves of Y
  // are exchanged every step.
  int y = s.instance->find_output("Y");
  REQUIRE(y >= 0);
  REQUIRE(hidden.state_regions[static_cast<size_t>(y)].has_value());
  CHECK((*hidden.state_regions[static_cast<size_t>(y)])[0].dims[3].to_string() == "[0, 127]");
  // The sequence is the recurrence's axis: a split of s is no parallel split (issue 18: it was
  // priced as pieces running side by side, each needing the one before).
  for (const Strategy& st : s.analysis->strategies)
    if (st.var == "s") CHECK_FALSE(st.valid);
}

TEST_CASE("Gemm with transB and a bias: rows and columns split, the bias follows the columns") {
  ir::Graph g =
      GraphBuilder()
          .input("x", {32, 4096})
          .param("w", {1000, 4096})
          .param("b", {1000})
          .op("fc", "Gemm", {"x", "w", "b"}, {{"y", {32, 1000}}}, {{"transB", attr(int64_t{1})}})
          .op("fc_nb", "Gemm", {"x", "w"}, {{"z", {32, 1000}}}, {{"transB", attr(int64_t{1})}})
          .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "fc");
  const Strategy& n = strategy(s, "n");
  CHECK(region(s, n, "B", 1) == "[500..999, 0..4095]");
  CHECK(region(s, n, "C", 1) == "[500..999]");
  CHECK(n.replicated[0]);
  // The bias is spread over the sum's terms, so k splits as a reduction (row-parallel linear):
  // each worker reads half of the rows of k and all of the bias.
  const Strategy& k = strategy(s, "k");
  CHECK(k.kind == Strategy::Kind::kReduction);
  CHECK(region(s, k, "A", 1) == "[0..31, 2048..4095]");
  CHECK(region(s, k, "B", 0) == "[0..999, 0..2047]");
  CHECK(region(s, k, "C", 1) == "[0..999]");
  CHECK(strategies_of(cache, g, "fc_nb").num_strategies() == 3);
}

TEST_CASE("Gather (embedding): splits along the indices and the hidden size, reads whole rows") {
  ir::Graph g = GraphBuilder()
                    .param("emb", {50257, 768})
                    .input("ids", {8, 256})
                    .op("wte", "Gather", {"emb", "ids"}, {{"h", {8, 256, 768}}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "wte");
  REQUIRE(s.analysis->output_vars.size() == 3);
  const Strategy& tokens = strategy(s, s.analysis->output_vars[0]);
  CHECK(region(s, tokens, "indices", 1) == "[4..7, 0..255]");
  CHECK(region(s, tokens, "data", 1) == "[0..50256, 0..767]");
  const Strategy& hidden = strategy(s, s.analysis->output_vars[2]);
  CHECK(region(s, hidden, "data", 0) == "[0..50256, 0..383]");
  CHECK(region(s, hidden, "indices", 0) == "[0..7, 0..255]");
}

TEST_CASE("Split and Concat along the last axis map each output to its slice") {
  ir::Graph g =
      GraphBuilder()
          .input("x", {32, 4096})
          .constant("sizes", {1024, 1024, 2048})
          .op("split", "Split", {"x", "sizes"},
              {{"a", {32, 1024}}, {"b", {32, 1024}}, {"c", {32, 2048}}},
              {{"axis", attr(int64_t{-1})}})
          .op("cat", "Concat", {"c", "a"}, {{"d", {32, 3072}}}, {{"axis", attr(int64_t{1})}})
          .build();
  StrategyCache cache(library());
  const OpStrategies& split = strategies_of(cache, g, "split");
  const Strategy& rows = strategy(split, split.analysis->output_vars[0]);
  CHECK(region(split, rows, "input", 1) == "[16..31, 0..4095]");
  const OpStrategies& cat = strategies_of(cache, g, "cat");
  const Strategy& cols = strategy(cat, cat.analysis->output_vars[1]);
  // Output columns 0..1535 come from c (2048 wide), 1536..3071 from c's tail and all of a.
  CHECK(region(cat, cols, "inputs_0", 0) == "[0..31, 0..1535]");
  CHECK(region(cat, cols, "inputs_1", 1) == "[0..31, 0..1023]");
  CHECK(region(cat, cols, "inputs_0", 1) == "[0..31, 1536..2047]");
}

TEST_CASE("MaxPool: a spatial split reads the window's halo; the window reduces with max") {
  ir::Graph g = GraphBuilder()
                    .input("x", {32, 64, 112, 112})
                    .op("pool", "MaxPool", {"x"}, {{"y", {32, 64, 56, 56}}},
                        {{"kernel_shape", attr({3, 3})},
                         {"strides", attr({2, 2})},
                         {"pads", attr({1, 1, 1, 1})}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "pool");
  const Strategy& rows = strategy(s, "o1");
  CHECK(region(s, rows, "X", 0) == "[0..31, 0..63, 0..55, 0..111]");
  CHECK(region(s, rows, "X", 1) == "[0..31, 0..63, 55..111, 0..111]");
  const Strategy& k1 = strategy(s, "k1");
  REQUIRE(k1.output_reduction.has_value());
  CHECK(*k1.output_reduction == Reducer::kMax);
}

TEST_CASE("ReduceMean over the last axis (opset 18 axes input) and LayerNorm's decomposition") {
  ir::Graph g = GraphBuilder()
                    .input("x", {8, 128, 768})
                    .constant("axes", {-1})
                    .op("mean", "ReduceMean", {"x", "axes"}, {{"m", {8, 128, 1}}})
                    .op("sub", "Sub", {"x", "m"}, {{"d", {8, 128, 768}}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& mean = strategies_of(cache, g, "mean");
  CHECK(mean.num_strategies() == 3);  // the two kept dims, and the reduced axis (partial sums)
  const Strategy& k = strategy(mean, "k");
  CHECK(k.kind == Strategy::Kind::kReduction);
  CHECK(region(mean, k, "data", 1) == "[0..7, 0..127, 384..767]");
  // Sub broadcasts the mean's size-1 axis: a split of the hidden axis reads all of it.
  const OpStrategies& sub = strategies_of(cache, g, "sub");
  const Strategy& hidden = strategy(sub, sub.analysis->output_vars[2]);
  CHECK(region(sub, hidden, "B", 1) == "[0..7, 0..127, 0..0]");
  CHECK_FALSE(sub.analysis->elementwise);
}

TEST_CASE("BatchNormalization (inference): splits along batch, channels and space") {
  ir::Graph g = GraphBuilder()
                    .input("x", {16, 32, 8, 8})
                    .param("scale", {32})
                    .param("bias", {32})
                    .param("mean", {32})
                    .param("var", {32})
                    .op("bn", "BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                        {{"y", {16, 32, 8, 8}}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& s = strategies_of(cache, g, "bn");
  CHECK(s.num_strategies() == 4);
  const Strategy& c = strategy(s, "c");
  CHECK(region(s, c, "input_var", 1) == "[16..31]");
}

TEST_CASE("BatchNormalization in training mode: batch splits leave partial statistics") {
  // The importer's form (importers/training_ops.h): statistics, then the normalisation.
  ir::Graph g = GraphBuilder()
                    .input("x", {16, 32, 8, 8})
                    .param("scale", {32})
                    .param("bias", {32})
                    .op("stats", "BatchNormStats", {"x"}, {{"s", {2, 32}}},
                        {{"count", attr(int64_t{1024})}}, "ai.planner")
                    .op("bn", "BatchNormTrain", {"x", "scale", "bias", "s"},
                        {{"y", {16, 32, 8, 8}}}, {}, "ai.planner")
                    .build();
  StrategyCache cache(library());
  const OpStrategies& st = strategies_of(cache, g, "stats");
  // The batch (and space) are reductions: each worker sums its half, the halves add up.
  const Strategy* batch = nullptr;
  for (const Strategy& s : st.analysis->strategies)
    if (s.kind == Strategy::Kind::kReduction &&
        region(st, s, "X", 1) == "[8..15, 0..31, 0..7, 0..7]")
      batch = &s;
  REQUIRE(batch != nullptr);
  CHECK(batch->reduced_outputs[0]);
  CHECK(batch->output_reduction.has_value());
  const Strategy& c = strategy(st, st.analysis->output_vars[1]);
  CHECK(region(st, c, "X", 1) == "[0..15, 16..31, 0..7, 0..7]");
  // The normalisation splits along the batch reading only its rows and the whole statistics.
  const OpStrategies& bn = strategies_of(cache, g, "bn");
  const Strategy& n = strategy(bn, bn.analysis->output_vars[0]);
  CHECK(region(bn, n, "X", 1) == "[8..15, 0..31, 0..7, 0..7]");
  CHECK(region(bn, n, "Stats", 1) == "[0..1, 0..31]");
}

TEST_CASE(
    "torch's batch-first attention reshapes pass a batch split as the merged dim's outer factor") {
  // nn.MultiheadAttention(batch_first=True) in training mode: [S, B, E] -> [S, B*H, D] ->
  // [B*H, S, D], and back [S, B*H, D] -> [S, B, E] (the output projection unflattened by the
  // importer). B = 8, H = 4, S = 16, D = 6.
  ir::Graph g = GraphBuilder()
                    .input("x", {16, 8, 24})
                    .constant("heads", {16, 32, 6})
                    .constant("merged", {16, 8, 24})
                    .op("split_heads", "Reshape", {"x", "heads"}, {{"h", {16, 32, 6}}})
                    .op("to_batch", "Transpose", {"h"}, {{"t", {32, 16, 6}}},
                        {{"perm", attr(std::vector<int64_t>{1, 0, 2})}})
                    .op("from_batch", "Transpose", {"t"}, {{"u", {16, 32, 6}}},
                        {{"perm", attr(std::vector<int64_t>{1, 0, 2})}})
                    .op("merge_heads", "Reshape", {"u", "merged"}, {{"y", {16, 8, 24}}})
                    .build();
  StrategyCache cache(library());
  // Splitting B*H in two splits B in two: each worker reads its 4 batch entries, all heads.
  const OpStrategies& split = strategies_of(cache, g, "split_heads");
  const Strategy& bh = strategy(split, split.analysis->output_vars[1]);
  CHECK(region(split, bh, "data", 1) == "[0..15, 4..7, 0..23]");
  // The inverse: splitting B reads B's heads of the merged dimension, contiguous.
  const OpStrategies& merge = strategies_of(cache, g, "merge_heads");
  const Strategy& b = strategy(merge, merge.analysis->output_vars[1]);
  CHECK(region(merge, b, "data", 1) == "[0..15, 16..31, 0..5]");
}

TEST_CASE("Expand broadcasts to more dimensions; Clip with or without bounds reads its input") {
  ir::Graph g = GraphBuilder()
                    .input("x", {8, 1})
                    .input("hi", {})
                    .constant("shape", {4, 8, 16})
                    .op("expand", "Expand", {"x", "shape"}, {{"y", {4, 8, 16}}})
                    .op("clip", "Clip", {"x"}, {{"c1", {8, 1}}})
                    .op("clip_max", "Clip", {"x", "", "hi"}, {{"c2", {8, 1}}})
                    .build();
  StrategyCache cache(library());
  const OpStrategies& e = strategies_of(cache, g, "expand");
  REQUIRE(e.analysis->output_vars.size() == 3);
  CHECK(region(e, strategy(e, e.analysis->output_vars[0]), "input", 1) == "[0..7, 0..0]");
  CHECK(region(e, strategy(e, e.analysis->output_vars[1]), "input", 1) == "[4..7, 0..0]");
  const OpStrategies& c1 = strategies_of(cache, g, "clip");
  CHECK(c1.analysis->elementwise);
  const OpStrategies& c2 = strategies_of(cache, g, "clip_max");
  const Strategy& rows = strategy(c2, c2.analysis->output_vars[0]);
  CHECK(region(c2, rows, "input", 1) == "[4..7, 0..0]");
  CHECK(region(c2, rows, "max", 1) == "[]");
}

TEST_CASE("an undescribed custom operator is replicated, with one warning per type") {
  ir::Graph g = GraphBuilder()
                    .input("x", {4, 8})
                    .op("c1", "Frobnicate", {"x"}, {{"y1", {4, 8}}}, {}, "com.example")
                    .op("c2", "Frobnicate", {"y1"}, {{"y2", {4, 8}}}, {}, "com.example")
                    .op("relu", "Relu", {"y2"}, {{"y3", {4, 8}}})
                    .build();
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  logger->set_pattern("%l: %v");
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  StrategyCache cache(library());
  auto all = analyze_graph(cache, g, "custom.onnx");
  spdlog::set_default_logger(previous);
  REQUIRE_MESSAGE(all.has_value(), (all ? "" : all.error().message()));
  CHECK(all->per_op[0]->replicated);
  CHECK(all->per_op[0]->num_strategies() == 0);
  CHECK_FALSE(all->per_op[2]->replicated);
  CHECK(all->undescribed == std::map<std::string, int>{{"com.example.Frobnicate", 2}});
  CHECK(log.str() ==
        "warning: custom.onnx: 2 operators of type 'com.example.Frobnicate' have no TDL "
        "description: kept whole (replicated)\n");

  // Described by a user file, the same operator gets strategies.
  tdl::Library with_user = library();
  REQUIRE(with_user
              .add_source("op com.example.Frobnicate(X[...]) -> Y[...] = opaque(X[...])\n",
                          "user.tdl", true)
              .has_value());
  StrategyCache user_cache(with_user);
  CHECK(strategies_of(user_cache, g, "c1").num_strategies() == 2);
}

TEST_CASE("a described operator that fails to instantiate is an error naming the node") {
  ir::Graph g = GraphBuilder()
                    .input("x", {2, 3, 4, 4, 4, 4})
                    .param("w", {5, 3, 1, 1, 1, 1})
                    .op("conv4d", "Conv", {"x", "w"}, {{"y", {2, 5, 4, 4, 4, 4}}})
                    .build();
  StrategyCache cache(library());
  auto all = analyze_graph(cache, g, "model.onnx");
  REQUIRE_FALSE(all.has_value());
  CHECK(all.error().message().rfind("model.onnx: node 'conv4d' (Conv): ", 0) == 0);
  // Cached failures still name the node asking.
  auto again = cache.strategies(g, 0);
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().message().rfind("node 'conv4d' (Conv): ", 0) == 0);
  CHECK(cache.stats().analyses == 1);
}

TEST_CASE("identical operators share one analysis") {
  GraphBuilder b;
  b.input("x0", {8, 128, 768}).param("bias", {768});
  for (int i = 0; i < 200; ++i)
    b.op("add" + std::to_string(i), "Add", {"x" + std::to_string(i), "bias"},
         {{"x" + std::to_string(i + 1), {8, 128, 768}}});
  b.op("other", "Add", {"x200", "x200"}, {{"z", {8, 128, 768}}});
  ir::Graph g = b.build();
  StrategyCache cache(library());
  auto all = analyze_graph(cache, g, "adds.onnx");
  REQUIRE(all.has_value());
  CHECK(cache.stats().lookups == 201);
  CHECK(cache.stats().analyses == 2);  // bias of rank 1, and the [8,128,768] + [8,128,768] add
  CHECK(cache.stats().hits == 199);
  CHECK(all->per_op[0] == all->per_op[150]);  // the same cached result
  CHECK(all->per_op[200] != all->per_op[0]);
  CHECK(all->per_op[200]->analysis->elementwise);
  // A second pass is all hits.
  for (ir::OpId id = 0; id < g.num_ops(); ++id) REQUIRE(cache.strategies(g, id).has_value());
  CHECK(cache.stats().analyses == 2);
  CHECK(cache.stats().hits == 199 + 201);
}

TEST_CASE("every shipped description, asked for odd nodes, answers or errors without crashing") {
  // Requests a real graph would rarely make (every input of the same rank, outputs shaped like the
  // first input, attributes at their defaults): instantiation may refuse them, but never abort.
  int analysed = 0, refused = 0;
  for (const tdl::OpEntry* entry : library().entries()) {
    size_t max_inputs = 0;
    for (const tdl::OpDef* def : entry->variants)
      max_inputs = std::max(max_inputs, def->inputs.size());
    for (int rank = 0; rank <= 4; ++rank) {
      for (size_t n_inputs = 1; n_inputs <= std::max<size_t>(max_inputs, 1); ++n_inputs) {
        tdl::InstanceRequest req;
        req.op_type = entry->op_type;
        req.domain = entry->domain;
        req.node_name = "odd";
        std::vector<int64_t> shape(static_cast<size_t>(rank), 4);
        for (size_t i = 0; i < n_inputs; ++i) req.inputs.push_back({true, shape, std::nullopt});
        req.outputs.push_back({true, shape});
        CAPTURE(entry->display_name());
        CAPTURE(rank);
        CAPTURE(n_inputs);
        auto inst = tdl::instantiate(entry->variants, req, entry->source);
        if (!inst) {
          ++refused;
          CHECK(!inst.error().message().empty());
          continue;
        }
        auto a = analyze(*inst);
        if (a)
          ++analysed;
        else
          ++refused;
      }
    }
  }
  MESSAGE(analysed << " odd requests analysed, " << refused << " refused with an error");
  CHECK(analysed > 100);
}

TEST_CASE("every operator of every shared model gets strategies or the replication flag") {
  PLANNER_REQUIRE_SHARED_MODELS();
  std::vector<std::filesystem::path> models;
  for (const auto& e : std::filesystem::directory_iterator(planner::testing::shared_models_dir()))
    if (e.path().extension() == ".onnx") models.push_back(e.path());
  std::sort(models.begin(), models.end());
  REQUIRE(!models.empty());
  for (const auto& path : models) {
    CAPTURE(path.filename().string());
    auto graph = importers::import_model(path.string());
    if (!graph && graph.error().message().find("not built yet") != std::string::npos) {
      MESSAGE("SKIPPED: the ONNX importer is not built in this branch; " << path.filename().string()
                                                                         << " not analysed");
      continue;
    }
    REQUIRE_MESSAGE(graph.has_value(), (graph ? "" : graph.error().message()));
    StrategyCache cache(library());
    auto all = analyze_graph(cache, *graph, path.filename().string());
    REQUIRE_MESSAGE(all.has_value(), (all ? "" : all.error().message()));
    int described = 0;
    for (ir::OpId id = 0; id < graph->num_ops(); ++id) {
      const OpStrategies* s = all->per_op[static_cast<size_t>(id)];
      REQUIRE(s != nullptr);
      if (s->replicated) continue;
      ++described;
      CHECK(s->analysis != nullptr);
    }
    MESSAGE(path.filename().string()
            << ": " << graph->num_ops() << " operators (" << described << " described, "
            << cache.stats().analyses << " distinct) analysed in " << all->milliseconds << " ms");
    // Every operator type of the models is described; only Constant and Shape, which the
    // importer folds away, may remain undescribed (and are then replicated).
    for (const auto& entry : all->undescribed) {
      const auto& type = entry.first;  // not a binding: doctest's macros are lambdas
      CAPTURE(type);
      CHECK((type == "Constant" || type == "Shape"));
    }
    // A second pass over the graph is all cache hits.
    auto start = std::chrono::steady_clock::now();
    for (ir::OpId id = 0; id < graph->num_ops(); ++id)
      REQUIRE(cache.strategies(*graph, id).has_value());
    double again =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    CHECK(again < 100);
  }
}

}  // namespace
}  // namespace planner::analysis
