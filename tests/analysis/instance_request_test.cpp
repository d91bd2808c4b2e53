// Tests for analysis/instance_request.cpp: ONNX nodes to instantiation requests, with the
// defaults and conventions normalised.
#include "analysis/instance_request.h"

#include "tests/analysis/graph_builder.h"

namespace planner::analysis {
namespace {

using testing::attr;
using testing::GraphBuilder;

tdl::InstanceRequest request_for(const ir::Graph& g, const std::string& node) {
  auto op = g.find_op(node);
  REQUIRE(op.has_value());
  auto req = make_instance_request(g, *op);
  REQUIRE_MESSAGE(req.has_value(), (req ? "" : req.error().message()));
  return *req;
}

std::vector<int64_t> ints(const tdl::InstanceRequest& r, const std::string& name) {
  auto it = r.attributes.find(name);
  REQUIRE_MESSAGE(it != r.attributes.end(), "no attribute " << name);
  auto* v = std::get_if<std::vector<int64_t>>(&it->second);
  REQUIRE(v != nullptr);
  return *v;
}

TEST_CASE("Conv: auto_pad SAME_UPPER becomes explicit pads, defaults are filled") {
  ir::Graph g = GraphBuilder()
                    .input("x", {1, 3, 10, 7})
                    .param("w", {8, 3, 3, 4})
                    .op("conv", "Conv", {"x", "w"}, {{"y", {1, 8, 5, 4}}},
                        {{"auto_pad", attr("SAME_UPPER")}, {"strides", attr({2, 2})}})
                    .build();
  tdl::InstanceRequest r = request_for(g, "conv");
  CHECK(ints(r, "kernel_shape") == std::vector<int64_t>{3, 4});
  CHECK(ints(r, "dilations") == std::vector<int64_t>{1, 1});
  // H: out 5, total pad (5-1)*2 + 3 - 10 = 1 -> [0, 1]; W: out 4, total (4-1)*2 + 4 - 7 = 3 -> [1,
  // 2]
  CHECK(ints(r, "pads") == std::vector<int64_t>{0, 1, 1, 2});
  CHECK(std::get<std::string>(r.attributes.at("auto_pad")) == "NOTSET");
  CHECK(r.inputs.size() == 2);
  CHECK(r.outputs[0].shape == std::vector<int64_t>{1, 8, 5, 4});
}

TEST_CASE("Conv: SAME_LOWER puts the odd padding first; a wrong-length attribute names the node") {
  ir::Graph g =
      GraphBuilder()
          .input("x", {1, 3, 10})
          .param("w", {8, 3, 4})
          .op("c1", "Conv", {"x", "w"}, {{"y", {1, 8, 10}}}, {{"auto_pad", attr("SAME_LOWER")}})
          .op("c2", "Conv", {"x", "w"}, {{"z", {1, 8, 7}}}, {{"strides", attr({1, 1})}})
          .build();
  CHECK(ints(request_for(g, "c1"), "pads") == std::vector<int64_t>{2, 1});
  auto bad = make_instance_request(g, *g.find_op("c2"));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message() == "node 'c2' (Conv): attribute 'strides' has 2 values, expected 1");
}

TEST_CASE("negative axes become non-negative; a constant axes input becomes the attribute") {
  ir::Graph g = GraphBuilder()
                    .input("x", {2, 5, 7})
                    .constant("axes", {-1})
                    .op("sm", "Softmax", {"x"}, {{"y", {2, 5, 7}}}, {{"axis", attr(int64_t{-2})}})
                    .op("rm", "ReduceMean", {"x", "axes"}, {{"m", {2, 5, 1}}})
                    .op("ra", "ReduceMean", {"x"}, {{"n", {2, 1, 7}}},
                        {{"axes", attr(std::vector<int64_t>{-2})}})
                    .op("bad", "Softmax", {"x"}, {{"z", {2, 5, 7}}}, {{"axis", attr(int64_t{3})}})
                    .build();
  CHECK(std::get<int64_t>(request_for(g, "sm").attributes.at("axis")) == 1);
  tdl::InstanceRequest rm = request_for(g, "rm");
  CHECK(ints(rm, "axes") == std::vector<int64_t>{2});
  REQUIRE(rm.inputs[1].values.has_value());
  CHECK(*rm.inputs[1].values == std::vector<int64_t>{-1});
  CHECK(ints(request_for(g, "ra"), "axes") == std::vector<int64_t>{1});
  auto bad = make_instance_request(g, *g.find_op("bad"));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message() == "node 'bad' (Softmax): axis 3 is out of range for rank 3");
}

TEST_CASE("the request key ignores node names and sees shapes, attributes and constants") {
  ir::Graph g = GraphBuilder()
                    .input("x", {4, 8})
                    .constant("s1", {8, 4})
                    .constant("s2", {2, 16})
                    .op("r1", "Reshape", {"x", "s1"}, {{"a", {8, 4}}})
                    .op("r2", "Reshape", {"x", "s1"}, {{"b", {8, 4}}})
                    .op("r3", "Reshape", {"x", "s2"}, {{"c", {2, 16}}})
                    .op("t1", "Transpose", {"x"}, {{"d", {8, 4}}}, {{"perm", attr({1, 0})}})
                    .op("u", "Custom", {"x", ""}, {{"e", {4, 8}}}, {}, "com.example")
                    .build();
  CHECK(request_key(request_for(g, "r1")) == request_key(request_for(g, "r2")));
  CHECK(request_key(request_for(g, "r1")) != request_key(request_for(g, "r3")));
  CHECK(request_key(request_for(g, "t1")) == "|Transpose|perm=[1, 0];|in [4,8]|out [8,4]");
  tdl::InstanceRequest u = request_for(g, "u");
  CHECK(u.domain == "com.example");
  CHECK_FALSE(u.inputs[1].present);
  CHECK(request_key(u) == "com.example|Custom||in [4,8] -|out [4,8]");
  CHECK(node_label(g.op(*g.find_op("u"))) == "node 'u' (com.example.Custom)");
}

}  // namespace
}  // namespace planner::analysis
