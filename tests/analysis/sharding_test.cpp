// Tests for analysis/sharding.cpp: text form, boxes, validation.
#include "analysis/sharding.h"

#include <doctest/doctest.h>

namespace planner::analysis {
namespace {

TEST_CASE("text form round-trips") {
  for (const char* text : {"S[2,1,4]@0-7", "S[1,4]*R2@0-7", "S[2,1]+P2@0-3", "S[1,1]*R8@0-7",
                           "S[4,1]@0,2,4,6", "S[1]@5", "S[]@0", "S[2,2]+P2*R2@0-15"}) {
    auto s = parse_sharding(text);
    REQUIRE_MESSAGE(s, text);
    std::string back = s->to_string();
    auto again = parse_sharding(back);
    REQUIRE(again);
    CHECK(*again == *s);
  }
  CHECK(parse_sharding("S[2,2]+P2*R2@0-15")->to_string() == "S[2,2]*R2+P2@0-15");
  CHECK(Sharding::split(2, 0, {0, 1, 2, 3}).to_string() == "S[4,1]@0-3");
  CHECK(Sharding::replicated(3, {4, 5}).to_string() == "S[1,1,1]*R2@4-5");
}

TEST_CASE("bad text is rejected with the text quoted") {
  auto s = parse_sharding("S[2,x]@0");
  REQUIRE_FALSE(s);
  CHECK(s.error().message() == "bad sharding 'S[2,x]@0': expected a tile count");
  CHECK_FALSE(parse_sharding("S[2]"));
  CHECK_FALSE(parse_sharding("S[2]@3-1"));
  CHECK_FALSE(parse_sharding("S[2]@0,1 extra"));
}

TEST_CASE("shards cover the tensor row-major with replicas fastest") {
  Sharding s = *parse_sharding("S[2,3]*R2@0-11");
  std::vector<int64_t> shape = {10, 7};
  CHECK(s.num_shards() == 12);
  CHECK(s.shard_box(shape, 0) == Box{{0, 5}, {0, 3}});
  CHECK(s.shard_box(shape, 1) == Box{{0, 5}, {0, 3}});  // replica of shard 0
  CHECK(s.shard_box(shape, 2) == Box{{0, 5}, {3, 5}});
  CHECK(s.shard_box(shape, 11) == Box{{5, 10}, {5, 7}});
  CHECK(s.bytes_per_device(shape, 4) == 5 * 3 * 4);
  CHECK(split_range(10, 4, 0) == Range{0, 3});
  CHECK(split_range(10, 4, 3) == Range{8, 10});
}

TEST_CASE("validate names the sharding and the shape") {
  Sharding s = *parse_sharding("S[4,1]@0-3");
  CHECK(s.validate({8, 8}, 4));
  auto r = s.validate({3, 8}, 4);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() ==
        "sharding S[4,1]@0-3 of shape [3,8]: dimension 0 of size 3 cannot be split 4 ways");
  r = s.validate({8, 8}, 2);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() ==
        "sharding S[4,1]@0-3 of shape [8,8]: device 2 is not among the 2 devices");
  r = parse_sharding("S[2]@0,0")->validate({8}, 4);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "sharding S[2]@0,0 of shape [8]: device 0 is listed twice");
}

TEST_CASE("boxes intersect") {
  Box a = {{0, 5}, {2, 8}};
  Box b = {{3, 9}, {0, 4}};
  CHECK(intersect(a, b) == Box{{3, 5}, {2, 4}});
  CHECK(box_elements(intersect(a, b)) == 4);
  CHECK(box_elements(intersect(Box{{0, 2}}, Box{{5, 6}})) == 0);
}

}  // namespace
}  // namespace planner::analysis

// ---- OpConfig (analysis/op_config.h) ----------------------------------------------------

#include "analysis/op_config.h"

namespace planner::analysis {
namespace {

TEST_CASE("operator configurations: text form and shard numbering") {
  for (const char* text : {"{m:4,k:2}@0-7", "{b:8}@0-7", "{}*R8@0-7", "{}@3", "{n:2}*R2@0,2,4,6"}) {
    auto c = parse_op_config(text);
    REQUIRE_MESSAGE(c.has_value(), text);
    CHECK(c->to_string() == text);
  }
  OpConfig c = *parse_op_config("{m:4,k:2}*R2@0-15");
  CHECK(c.num_shards() == 16);
  CHECK(c.pieces("k") == 2);
  CHECK(c.pieces("n") == 1);
  CHECK(c.piece_coords(0) == std::vector<int>{0, 0});
  CHECK(c.piece_coords(1) == std::vector<int>{0, 0});  // replica
  CHECK(c.piece_coords(2) == std::vector<int>{0, 1});
  CHECK(c.piece_coords(15) == std::vector<int>{3, 1});
  CHECK(OpConfig::split("b", {0, 1, 2, 3}).to_string() == "{b:4}@0-3");
  CHECK(OpConfig::replicated({0, 1}).to_string() == "{}*R2@0-1");
  auto bad = parse_op_config("{m:4}@0-2");
  REQUIRE_FALSE(bad.has_value());
  CHECK(
      bad.error().message() ==
      "bad operator configuration '{m:4}@0-2': the device list does not have one device per shard");
}

TEST_CASE("sharding_of finds the layout that cuts a tensor into the boxes the devices hold") {
  const std::vector<int64_t> shape = {6, 8};
  // Column tiles, each on two devices, given in any order.
  auto s = sharding_of(shape, {3, 0, 2, 1},
                       {{{0, 6}, {4, 8}}, {{0, 6}, {0, 4}}, {{0, 6}, {4, 8}}, {{0, 6}, {0, 4}}});
  REQUIRE(s);
  CHECK(s->to_string() == "S[1,2]*R2@0-1,3,2");
  for (int i = 0; i < s->num_shards(); ++i)
    CHECK(s->shard_box(shape, i) ==
          (s->devices[static_cast<size_t>(i)] < 2 ? Box{{0, 6}, {0, 4}} : Box{{0, 6}, {4, 8}}));
  // Whole boxes: replicated.
  auto r = sharding_of(shape, {0, 1}, {{{0, 6}, {0, 8}}, {{0, 6}, {0, 8}}});
  REQUIRE(r);
  CHECK(r->to_string() == "S[1,1]*R2@0-1");
  // Tiles that are not the even cut, a missing tile, a device listed twice: no sharding.
  CHECK_FALSE(sharding_of(shape, {0, 1}, {{{0, 2}, {0, 8}}, {{2, 6}, {0, 8}}}));
  CHECK_FALSE(
      sharding_of(shape, {0, 1, 2}, {{{0, 3}, {0, 4}}, {{0, 3}, {4, 8}}, {{3, 6}, {0, 4}}}));
  CHECK_FALSE(sharding_of(shape, {0, 0}, {{{0, 3}, {0, 8}}, {{3, 6}, {0, 8}}}));
}

}  // namespace
}  // namespace planner::analysis
