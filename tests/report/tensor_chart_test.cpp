// Tests for report/tensor_chart.cpp: which tensors are drawn, how a tensor folds into a matrix,
// tiles and their colours for known tilings and for a planned model, escaping, determinism.
#include "report/tensor_chart.h"

#include <set>

#include "report/svg.h"
#include "support/text.h"
#include "tests/report/report_fixture.h"
#include "tests/search/plan_builder.h"

namespace planner::report {
namespace {

using search::testing::make_tensor;
using testing::count;

// A plan holding just `tensors` on `devices` GPUs (tensor_svg reads nothing else).
search::Plan plan_of(std::vector<search::PlanTensor> tensors, int devices) {
  search::Plan p;
  p.model = {"m", std::string(64, '0'), 1, ""};
  p.topology = {"test", devices, 1};
  p.tensors = std::move(tensors);
  return p;
}

// The fill colours of the tiles' stripes (not the legend's swatches).
std::set<std::string> tile_fills(const std::string& svg) {
  std::set<std::string> fills;
  for (size_t at = svg.find("<g><title>tile"); at != std::string::npos;
       at = svg.find("<g><title>tile", at + 1)) {
    const size_t end = svg.find("</g>", at);
    for (size_t f = svg.find("fill=\"#", at); f < end; f = svg.find("fill=\"#", f + 1))
      fills.insert(svg.substr(f + 6, 7));
  }
  return fills;
}

TEST_CASE("a tensor folds into rows and columns as near square as can be") {
  CHECK(row_column_split({}) == 0);
  CHECK(row_column_split({5}) == 0);
  CHECK(row_column_split({4, 8}) == 1);
  CHECK(row_column_split({8, 1024, 768}) == 2);    // tokens down, features across
  CHECK(row_column_split({64, 64, 3, 3}) == 1);    // a convolution's weight: out channels down
  CHECK(row_column_split({32, 64, 56, 56}) == 2);  // images x channels down, pixels across
  CHECK(row_column_split({1, 1, 1}) == 2);         // ties: more dimensions in the rows
}

TEST_CASE("the large tensors: half parameters, the rest activations, largest first") {
  using ir::TensorRole;
  auto p = plan_of({make_tensor("x", {64, 1024}, TensorRole::kInput, "S[1,1]@0"),
                    make_tensor("w1", {1024, 1024}, TensorRole::kParameter, "S[1,1]@0"),
                    make_tensor("h", {64, 4096}, TensorRole::kActivation, "S[1,1]@0"),
                    make_tensor("w2", {4096, 1024}, TensorRole::kParameter, "S[1,1]@0"),
                    make_tensor("w3", {8, 8}, TensorRole::kParameter, "S[1,1]@0"),
                    make_tensor("m", {4096, 1024}, TensorRole::kOptimizerState, "S[1,1]@0"),
                    make_tensor("s", {}, TensorRole::kActivation, "S[]@0")},
                   1);
  CHECK(large_tensors(p, 4) == std::vector<int>{3, 1, 2, 0});  // w2, w1, h, x
  CHECK(large_tensors(p, 2) == std::vector<int>{3, 2});        // one of each
  CHECK(large_tensors(p, 1) == std::vector<int>{3});
  CHECK(large_tensors(p, 9) == std::vector<int>{3, 1, 2, 0, 4});  // no state, no scalar
  CHECK(large_tensors(p, 0).empty());
}

TEST_CASE("replicated tiles are striped with every holder's colour") {
  auto p =
      plan_of({make_tensor("w", {256, 512}, ir::TensorRole::kParameter, "S[2,1]*R2@0,2,1,3")}, 4);
  const std::string svg = tensor_svg(p, {});
  CHECK(count(svg, "<g><title>tile") == 2);
  CHECK(count(svg, "<title>tile [0:128, 0:512] on GPUs 0, 2 (2 replicas)</title>") == 1);
  CHECK(count(svg, "<title>tile [128:256, 0:512] on GPUs 1, 3 (2 replicas)</title>") == 1);
  CHECK(count(svg, ">\u00d72</text>") == 2);
  CHECK(tile_fills(svg) == std::set<std::string>{device_colour(0), device_colour(1),
                                                 device_colour(2), device_colour(3)});
  CHECK(count(svg, ">S[2,1]*R2@0,2,1,3<title>S[2,1]*R2@0,2,1,3</title>") == 1);
  CHECK(count(svg, "rows d0 (256) \u00d7 columns d1 (512)") == 1);
  CHECK(count(svg, "url(#partial)") == 0);
}

TEST_CASE("partial sums are hatched and labelled") {
  auto p = plan_of({make_tensor("y", {64, 64}, ir::TensorRole::kActivation, "S[2,1]+P2@0-3")}, 4);
  const std::string svg = tensor_svg(p, {});
  CHECK(count(svg, "<g><title>tile") == 2);
  CHECK(count(svg, "url(#partial)") == 2);
  CHECK(count(svg, ">\u03a32</text>") == 2);
  CHECK(count(svg, "on GPUs 0-1 (2 partial sums)</title>") == 1);
}

TEST_CASE("tiles held by one GPU are filled with its colour and labelled") {
  auto p = plan_of({make_tensor("h", {64, 1024}, ir::TensorRole::kActivation, "S[1,4]@0-3")}, 4);
  const std::string svg = tensor_svg(p, {});
  CHECK(count(svg, "<g><title>tile") == 4);
  for (int d = 0; d < 4; ++d)
    CHECK(count(svg, fmt::format(">GPU {}</text>", d)) == 2);  // tile and legend
  CHECK(count(svg, "<title>tile [0:64, 256:512] on GPU 1</title>") == 1);
}

TEST_CASE("more holders than pixels: grey; more GPUs than the legend lists: a note") {
  auto p = plan_of({make_tensor("b", {8}, ir::TensorRole::kParameter, "S[1]*R512@0-511")}, 512);
  const std::string svg = tensor_svg(p, {});
  CHECK(tile_fills(svg) == std::set<std::string>{"#bbbbbb"});
  CHECK(count(svg, "GPUs 64-511: further hues") == 1);
  CHECK(count(svg, "on GPUs 0-511 (512 replicas)") == 1);
}

TEST_CASE("the MLP on 4 GPUs: every tile of every drawn tensor, in the plan's GPUs' colours") {
  auto planned = testing::plan_mlp(4);
  const search::Plan& plan = planned->plan;
  const std::vector<int> chosen = large_tensors(plan, 12);
  REQUIRE(!chosen.empty());
  int tiles = 0;
  for (int i : chosen) tiles += plan.tensors[static_cast<size_t>(i)].sharding.num_tiles();
  TensorChartOptions options;
  options.title = "mlp";
  const std::string svg = tensor_svg(plan, options);
  CHECK(count(svg, "<g><title>tile") == tiles);
  for (int i : chosen)
    CHECK(count(svg, plan.tensors[static_cast<size_t>(i)].sharding.to_string()) >= 1);
  std::set<std::string> allowed = {"#bbbbbb"};
  for (int d = 0; d < 4; ++d) allowed.insert(device_colour(d));
  for (const std::string& fill : tile_fills(svg)) CHECK_MESSAGE(allowed.count(fill) == 1, fill);
  CHECK(count(svg, ">GPU 3</text>") >= 1);
  CHECK(count(svg, ">GPU 4</text>") == 0);
  CHECK(tensor_svg(plan, options) == svg);  // deterministic
}

TEST_CASE("names with markup, quotes, line breaks, control bytes and bad UTF-8 are escaped") {
  const std::string nasty = "<script>alert(\"x\")</script> & 'y'\nz\x01\xff";
  auto p = plan_of({make_tensor(nasty, {16, 16}, ir::TensorRole::kParameter, "S[2,2]@0-3")}, 4);
  TensorChartOptions options;
  options.title = nasty;
  const std::string svg = tensor_svg(p, options);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;") !=
        std::string::npos);
  CHECK(valid_utf8(svg) == svg);
  for (char c : svg)
    CHECK_MESSAGE((static_cast<unsigned char>(c) >= 0x20 || c == '\n'), "control byte " << int(c));
}

}  // namespace
}  // namespace planner::report
