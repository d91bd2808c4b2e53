// Tests for search/replicas.cpp: where replicas sit, how a block's configs and layouts repeat.
#include "search/replicas.h"

#include <doctest/doctest.h>

namespace planner::search {
namespace {

using analysis::OpConfig;
using analysis::parse_op_config;
using analysis::parse_sharding;
using analysis::Sharding;

OpConfig config(const char* text) {
  return *parse_op_config(text);
}
Sharding layout(const char* text) {
  return *parse_sharding(text);
}

TEST_CASE("replica k of a block is GPUs [k*B, (k+1)*B); with stages, stage-major") {
  const ReplicaLayout flat{4, 3, 1};
  CHECK(flat.device(0, 3) == 3);
  CHECK(flat.device(2, 1) == 9);
  // Two stages of 2 GPUs: stage 0 of every replica first, then stage 1.
  const ReplicaLayout staged{4, 3, 2};
  CHECK(staged.device(0, 0) == 0);
  CHECK(staged.device(1, 0) == 2);
  CHECK(staged.device(2, 1) == 5);
  CHECK(staged.device(0, 2) == 6);
  CHECK(staged.device(2, 3) == 11);
  for (const ReplicaLayout& l : {flat, staged})
    for (int d = 0; d < l.devices(); ++d) {
      const auto [copy, inner] = l.locate(d);
      CHECK(l.device(copy, inner) == d);
    }
}

TEST_CASE("the batch variable splits once more, outermost; the rest replicate") {
  const std::vector<std::string> vars = {"b", "b", "", "b"};
  const std::vector<OpConfig> block = {config("{n:2}@0-1"), config("{b:2}@1,0"),
                                       config("{e:2}@0-1"), config("{b:2,n:2}@0-3")};
  const auto two = replicate_configs(block, vars, {4, 2, 1});
  CHECK(two[0].to_string() == "{b:2,n:2}@0-1,4-5");
  CHECK(two[1].to_string() == "{b:4}@1,0,5,4");
  // Replicas vary fastest: piece 0 on both copies' device 0, then piece 1.
  CHECK(two[2].to_string() == "{e:2}*R2@0,4,1,5");
  CHECK(two[3].to_string() == "{b:4,n:2}@0-7");
  // One copy is the block itself.
  CHECK(replicate_configs(block, vars, {4, 1, 1}) == block);
}

TEST_CASE("an operator that falls back in the block runs whole on each of its devices") {
  const std::vector<OpConfig> block = {config("{e2:2}@0-1")};
  const auto two = replicate_configs(block, {"e0"}, {2, 2, 1}, {1});
  CHECK(two[0].to_string() == "{e0:2}*R2@0-3");
  const auto one = replicate_configs(block, {"e0"}, {2, 1, 1}, {1});
  CHECK(one[0].to_string() == "{}*R2@0-1");
}

TEST_CASE("layouts repeat the count two replicas double") {
  const ir::Graph g = [] {
    ir::Graph graph;
    for (const char* name : {"x", "w", "gw", "unread"}) {
      ir::Tensor t;
      t.name = name;
      t.shape = {8, 4};
      graph.add_tensor(std::move(t));
    }
    return graph;
  }();
  const std::vector<Sharding> one = {layout("S[2,1]@1,0"), layout("S[1,1]*R2@0-1"),
                                     layout("S[1,1]+P2@0-1"), Sharding{}};
  const std::vector<Sharding> two = {layout("S[4,1]@1,0,3,2"), layout("S[1,1]*R4@0-3"),
                                     layout("S[1,1]+P4@0-3"), Sharding{}};
  auto four = replicate_layouts(one, two, {2, 4, 1}, g);
  REQUIRE(four);
  CHECK((*four)[0].to_string() == "S[8,1]@1,0,3,2,5,4,7,6");
  CHECK((*four)[1].to_string() == "S[1,1]*R8@0-7");
  CHECK((*four)[2].to_string() == "S[1,1]+P8@0-7");
  CHECK((*four)[3].devices.empty());
  // A second replica that does something else is refused, naming the tensor.
  std::vector<Sharding> odd = two;
  odd[0] = layout("S[1,1]*R4@0-3");
  auto refused = replicate_layouts(one, odd, {2, 4, 1}, g);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message().find("tensor 'x'") != std::string::npos);
}

}  // namespace
}  // namespace planner::search
