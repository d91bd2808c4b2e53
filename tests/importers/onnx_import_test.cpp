// Tests for importers/onnx_import.cpp (and the folding and shape rules it drives): inline models
// in ONNX's textual syntax, ModelProtos built in code and written to a temporary folder, and the
// real models in ../shared/models.
#include "importers/onnx_import.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include "ir/op_stats.h"
#include "tests/test_util.h"

namespace planner::importers {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHeader = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

Expected<ir::Graph> import_text(const std::string& body, const ImportOptions& options = {}) {
  return import_model_text(kHeader + body, "test.onnxtxt", options);
}

// The graph, or a test failure showing the import error.
ir::Graph must_import(const std::string& body, const ImportOptions& options = {}) {
  auto g = import_text(body, options);
  if (!g) FAIL("import failed: " << g.error().message());
  return std::move(*g);
}

std::string error_of(const Expected<ir::Graph>& g) {
  if (g) return "<imported without error>";
  return g.error().message();
}

std::map<std::string, int> op_counts(const ir::Graph& g) {
  return ir::graph_stats(g).op_counts;
}

const ir::Tensor& tensor(const ir::Graph& g, const std::string& name) {
  auto id = g.find_tensor(name);
  REQUIRE_MESSAGE(id.has_value(), "no tensor '" << name << "'");
  return g.tensor(*id);
}

void check_all_static(const ir::Graph& g) {
  for (const ir::Tensor& t : g.tensors())
    for (int64_t d : t.shape) CHECK_MESSAGE(d >= 0, "tensor '" << t.name << "' is not static");
}

// A fresh, empty folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "planner_onnx_test_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path write(const std::string& name, const std::string& bytes) const {
    fs::path p = path / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
};

// x[2,4] @ w[4,3] -> y[2,3], with `w` stored as external data at `location`.
onnx::ModelProto external_weight_model(const std::string& location) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("ext");
  auto add_value = [](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                      const std::string& name, std::vector<int64_t> dims) {
    onnx::ValueInfoProto* vi = list->Add();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_value(g->mutable_input(), "x", {2, 4});
  add_value(g->mutable_output(), "y", {2, 3});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(3);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  auto* len = w->add_external_data();
  len->set_key("length");
  len->set_value("48");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("MatMul");
  n->set_name("mm");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  return m;
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("a text model imports with roles, static shapes and deterministic names") {
  ir::Graph g = must_import(R"(
mlp (float[8,16] x) => (float[8,4] y)
<float[32,16] w1 = {}, float[32] b1 = {}, float[32,4] w2 = {}>
{
  h = Gemm<transB = 1>(x, w1, b1)
  a = Relu(h)
  y = MatMul(a, w2)
})");
  CHECK(g.name == "mlp");
  CHECK(tensor(g, "x").role == ir::TensorRole::kInput);
  CHECK(tensor(g, "w1").role == ir::TensorRole::kParameter);
  CHECK(tensor(g, "w1").shape == std::vector<int64_t>{32, 16});
  CHECK_FALSE(tensor(g, "w1").has_data());
  CHECK(tensor(g, "h").shape == std::vector<int64_t>{8, 32});
  CHECK(tensor(g, "y").shape == std::vector<int64_t>{8, 4});
  REQUIRE(g.num_ops() == 3);
  CHECK(g.op(0).name == "Gemm_0");
  CHECK(g.op(1).name == "Relu_1");
  CHECK(g.op(2).name == "MatMul_2");
  CHECK(ir::graph_stats(g).parameter_count == 32 * 16 + 32 + 32 * 4);
  CHECK(g.inputs.size() == 1);
  CHECK(g.outputs.size() == 1);
}

TEST_CASE("attributes convert to ir::Attribute values") {
  ImportOptions keep;
  keep.fold_constants = false;
  ir::Graph g = must_import(R"(
g (float[1,3,8,8] x) => (float[1,3,8,8] y)
{
  y = LeakyRelu<alpha = 0.25>(x)
  c = Constant<value = int64[2] {5, 6}>()
  p = Constant<value = int64[8] {0, 0, 1, 1, 0, 0, 1, 1}>()
  z = Pad<mode = "reflect">(x, p)
})",
                            keep);
  const ir::Op& leaky = g.op(*g.find_op("LeakyRelu_0"));
  CHECK(leaky.float_attr("alpha", 0) == doctest::Approx(0.25));
  const ir::Op& pad = g.op(*g.find_op("Pad_3"));
  CHECK(pad.string_attr("mode", "") == "reflect");
  const ir::Op& constant = g.op(*g.find_op("Constant_1"));
  const ir::Attribute* value = constant.attribute("value");
  REQUIRE(value);
  REQUIRE(value->is_tensor());
  CHECK(value->to_string() == "tensor<i64[2]>(5,6)");
}

TEST_CASE("a Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain folds to a constant shape") {
  ir::Graph g = must_import(R"(
g (float[2,3,4] x) => (float[2,12] y)
<int64[1] axes0 = {0}>
{
  s = Shape(x)
  i0 = Constant<value_int = 0>()
  d0 = Gather(s, i0)
  u = Unsqueeze(d0, axes0)
  m1 = Constant<value_ints = [-1]>()
  target = Concat<axis = 0>(u, m1)
  y = Reshape(x, target)
})");
  CHECK(op_counts(g) == std::map<std::string, int>{{"Reshape", 1}});
  const ir::Tensor& target = tensor(g, "target");
  CHECK(target.role == ir::TensorRole::kConstant);
  CHECK(target.int_values() == std::vector<int64_t>{2, -1});
  CHECK(tensor(g, "y").shape == std::vector<int64_t>{2, 12});
  // The chain's intermediate results are gone with the ops that made them.
  CHECK_FALSE(g.find_tensor("s"));
  CHECK_FALSE(g.find_tensor("axes0"));
}

TEST_CASE("Range, Cast, ConstantOfShape, Expand, Equal and Where fold") {
  ir::Graph g = must_import(R"(
g (float[4,6] x) => (float[4,6] y)
{
  s = Shape(x)
  one_i = Constant<value_int = 1>()
  zero_i = Constant<value_int = 0>()
  n = Gather(s, one_i)
  r = Range(zero_i, n, one_i)
  rf = Cast<to = 1>(r)
  e = Expand(rf, s)
  three = Constant<value_int = 3>()
  is3 = Equal(r, three)
  zeros = ConstantOfShape<value = float[1] {0.5}>(s)
  zrow = Gather(zeros, zero_i)
  picked = Where(is3, zrow, rf)
  a = Add(x, e)
  y = Mul(a, picked)
})");
  CHECK(op_counts(g) == std::map<std::string, int>{{"Add", 1}, {"Mul", 1}});
  CHECK(tensor(g, "e").float_values() == std::vector<double>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5,
                                                             0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
  CHECK(tensor(g, "picked").float_values() == std::vector<double>{0, 1, 2, 0.5, 4, 5});
  CHECK(tensor(g, "picked").dtype == ir::DType::kFloat32);
  CHECK(tensor(g, "y").shape == std::vector<int64_t>{4, 6});
}

TEST_CASE("Slice bounds computed from Shape -> Gather -> Div chains become static") {
  // The attention pattern of bert_base.onnx: a fused [.., 3*d] projection sliced into thirds
  // with bounds computed from its own shape. ONNX shape inference leaves the Slices unknown.
  ir::Graph g = must_import(R"(
g (float[2,5,12] x) => (float[2,5,4] q, float[2,5,4] k, float[2,5,4] v)
<int64[1] last = {-1}>
{
  s = Shape(x)
  i = Constant<value_int = -1>()
  width = Gather(s, i)
  three = Constant<value_int = 3>()
  d = Div(width, three)
  one = Constant<value_int = 1>()
  two = Constant<value_int = 2>()
  zero = Constant<value_int = 0>()
  b0 = Mul(d, zero)
  b1 = Mul(d, one)
  b2 = Mul(d, two)
  b3 = Mul(d, three)
  ax = Constant<value_ints = [0]>()
  u0 = Unsqueeze(b0, ax)
  u1 = Unsqueeze(b1, ax)
  u2 = Unsqueeze(b2, ax)
  u3 = Unsqueeze(b3, ax)
  qs = Slice(x, u0, u1, last)
  ks = Slice(x, u1, u2, last)
  vs = Slice(x, u2, u3, last)
  q = Relu(qs)
  k = Relu(ks)
  v = Relu(vs)
})");
  CHECK(op_counts(g) == std::map<std::string, int>{{"Relu", 3}, {"Slice", 3}});
  CHECK(tensor(g, "qs").shape == std::vector<int64_t>{2, 5, 4});
  CHECK(tensor(g, "vs").shape == std::vector<int64_t>{2, 5, 4});
  CHECK(tensor(g, "u2").int_values() == std::vector<int64_t>{8});
  check_all_static(g);
}

TEST_CASE("Squeeze, Unsqueeze, Slice, Concat, Transpose and arithmetic fold on constants") {
  ir::Graph g = must_import(R"(
g (float[6,4] x) => (float[4,6] y)
<int64[1,3] dims = {1, 6, 4}, int64[1] a0 = {0}, int64[1] s1 = {1}, int64[1] e3 = {3}>
{
  sq = Squeeze(dims, a0)
  tail = Slice(sq, s1, e3)
  rev = Constant<value_ints = [1, 0]>()
  swapped = Gather(tail, rev)
  plus = Add(swapped, swapped)
  two = Constant<value_int = 2>()
  half = Div(plus, two)
  y0 = Reshape(x, half)
  y = Relu(y0)
})");
  CHECK(op_counts(g) == std::map<std::string, int>{{"Relu", 1}, {"Reshape", 1}});
  CHECK(tensor(g, "half").int_values() == std::vector<int64_t>{4, 6});
  CHECK(tensor(g, "y").shape == std::vector<int64_t>{4, 6});
}

TEST_CASE("data movement and integer arithmetic on constants follow ONNX semantics") {
  ir::Graph g = must_import(R"(
g (float[2,2] x) => (float[2,2] y, int64[1,2] q, int64 d)
<int64[2,3] m = {1, 2, 3, 4, 5, 6}, int64[1] st = {-1}, int64[1] en = {-100},
 int64[1] ax = {1}, int64[1] stp = {-1}, int64[2] parts = {1, 2}>
{
  rev = Slice(m, st, en, ax, stp)
  tr = Transpose(rev)
  a, b = Split<axis = 0>(tr, parts)
  fb = Cast<to = 1>(b)
  y = Add(x, fb)
  minus4 = Constant<value_int = -4>()
  q = Mod(a, minus4)
  minus7 = Constant<value_int = -7>()
  two = Constant<value_int = 2>()
  d = Div(minus7, two)
})");
  CHECK(op_counts(g) == std::map<std::string, int>{{"Add", 1}});
  // m reversed along axis 1, transposed, split into rows [0:1] and [1:3], cast to float.
  CHECK(tensor(g, "fb").float_values() == std::vector<double>{2, 5, 1, 4});
  CHECK_FALSE(g.find_tensor("rev"));  // intermediate constants die with their folded ops
  // Graph outputs may be constants; integer Mod takes the divisor's sign, Div truncates.
  CHECK(tensor(g, "q").role == ir::TensorRole::kConstant);
  CHECK(tensor(g, "q").int_values() == std::vector<int64_t>{-1, -2});
  CHECK(tensor(g, "d").int_values() == std::vector<int64_t>{-3});
  CHECK(tensor(g, "d").shape.empty());
}

TEST_CASE("an integer division by zero while folding names the node") {
  CHECK(error_of(import_text(R"(
g (float[2] x) => (int64 d) { one = Constant<value_int = 1>()  zero = Constant<value_int = 0>()
  d = Div(one, zero) })")) ==
        "test.onnxtxt: node 'Div_2' (Div): integer division by zero in constant Div");
}

TEST_CASE("nodes out of topological order import like sorted ones") {
  ir::Graph g = must_import(R"(
g (float[2,4] x, float[5,3] w) => (float[2,4] y)
{
  y = Neg(t)
  t = Relu(u)
  u = Abs(x)
})");
  CHECK(tensor(g, "y").shape == std::vector<int64_t>{2, 4});
  CHECK(g.op(g.topo_order().front()).name == "Abs_2");
  CHECK(error_of(import_text(R"(
g (float[2,4] x, float[5,3] w) => (float[2,3] y) { y = Relu(t)  t = MatMul(x, w) })")) ==
        "test.onnxtxt: node 'MatMul_1' (MatMul): shape inference failed: incompatible "
        "dimensions for matrix multiplication");
}

TEST_CASE("dead constants and dead ops are removed") {
  ir::Graph g = must_import(R"(
g (float[3] x) => (float[3] y)
<int64[2] unused_shape = {1, 3}>
{
  c = Constant<value_float = 2.0>()
  unused = Constant<value_ints = [1, 2, 3]>()
  dead = Relu(x)
  y = Mul(x, c)
})");
  CHECK(op_counts(g) == std::map<std::string, int>{{"Mul", 1}});
  CHECK_FALSE(g.find_tensor("unused"));
  CHECK_FALSE(g.find_tensor("unused_shape"));
  CHECK_FALSE(g.find_tensor("dead"));
  CHECK(tensor(g, "c").role == ir::TensorRole::kConstant);
  CHECK(tensor(g, "c").float_values() == std::vector<double>{2.0});
}

TEST_CASE("with fold_constants off the ops stay and shapes are still completed") {
  ImportOptions options;
  options.fold_constants = false;
  ir::Graph g = must_import(R"(
g (float[2,3,4] x) => (float[6,4] y)
{
  s = Shape(x)
  t = Constant<value_ints = [-1, 4]>()
  y = Reshape(x, t)
})",
                            options);
  CHECK(op_counts(g) == std::map<std::string, int>{{"Constant", 1}, {"Reshape", 1}, {"Shape", 1}});
  CHECK(tensor(g, "y").shape == std::vector<int64_t>{6, 4});
  CHECK(tensor(g, "s").shape == std::vector<int64_t>{3});
}

TEST_CASE("dynamic dimensions are bound with batch and dims, or reported with their names") {
  const std::string model = R"(
g (float[batch, seq, 16] x, int64[seq] pos) => (float[batch, seq, 16] y)
{
  y = Relu(x)
})";
  CHECK(error_of(import_text(model)) ==
        "test.onnxtxt: input 'x' has dynamic dimensions 'batch', 'seq': bind them with --batch N "
        "or --dim NAME=VALUE");
  ImportOptions batch_only;
  batch_only.batch = 4;
  CHECK(error_of(import_text(model, batch_only)) ==
        "test.onnxtxt: input 'x' has dynamic dimension 'seq': bind it with --batch N or --dim "
        "NAME=VALUE");
  ImportOptions typo = batch_only;
  typo.dims["sq"] = 3;
  CHECK(error_of(import_text(model, typo)) ==
        "test.onnxtxt: --dim sq=3: the model has no dynamic dimension named 'sq' (it has "
        "'batch', 'seq')");
  ImportOptions both = batch_only;
  both.dims["seq"] = 7;
  ir::Graph g = must_import(model, both);
  CHECK(tensor(g, "x").shape == std::vector<int64_t>{4, 7, 16});
  CHECK(tensor(g, "pos").shape == std::vector<int64_t>{7});
  CHECK(tensor(g, "y").shape == std::vector<int64_t>{4, 7, 16});
  ImportOptions by_name;
  by_name.dims = {{"batch", 2}, {"seq", 3}};
  CHECK(tensor(must_import(model, by_name), "y").shape == std::vector<int64_t>{2, 3, 16});
}

TEST_CASE("an unnamed dynamic dimension binds with --batch on axis 0 only") {
  const std::string model = R"(
g (float[?, 16] x) => (float[?, 16] y) { y = Relu(x) }
)";
  CHECK(error_of(import_text(model)) ==
        "test.onnxtxt: input 'x' has dynamic dimension '?': bind it with --batch N or --dim "
        "NAME=VALUE");
  ImportOptions batch;
  batch.batch = 5;
  CHECK(tensor(must_import(model, batch), "y").shape == std::vector<int64_t>{5, 16});
  CHECK(error_of(import_text("g (float[4, ?] x) => (float[4, ?] y) { y = Relu(x) }", batch)) ==
        "test.onnxtxt: input 'x' has an unnamed dynamic dimension at axis 1, which cannot be "
        "bound: export the model with a static or named dimension");
}

TEST_CASE("value_info that disagrees with the computation loses; it fills in for custom ops") {
  // The model declares a wrong shape for `t`: the computed one wins.
  ir::Graph g = must_import(R"(
g (float[2,4] x) => (float[2,4] y) <float[9,9] t> { t = Relu(x)  y = Neg(t) })");
  CHECK(tensor(g, "t").shape == std::vector<int64_t>{2, 4});

  // A custom-domain op has no shape rule; its declared value_info gives the shape.
  const std::string custom = R"(<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
g (float[2,4] x) => (float[2,8] y) <float[2,8] t> { t = com.example.Widen(x)  y = Relu(t) })";
  auto widened = import_model_text(custom, "test.onnxtxt");
  REQUIRE_MESSAGE(widened, error_of(widened));
  CHECK(tensor(*widened, "t").shape == std::vector<int64_t>{2, 8});
  CHECK(widened->op(0).domain == "com.example");
  CHECK(error_of(import_model_text(R"(<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
g (float[2,4] x) => (float[2,4] y) { t = com.example.Widen(x)  y = Relu(t) })",
                                   "test.onnxtxt")) ==
        "test.onnxtxt: node 'Widen_0' (com.example.Widen): cannot infer a static shape for "
        "output 't' (unknown rank, unknown element type)");
}

TEST_CASE(
    "integer initializers are constants with values; float initializer data loads on request") {
  const std::string model = R"(
g (float[2] x) => (float[2] y)
<float[2] b = {1.5, 2.5}, int64[1] shape = {2}>
{
  r = Reshape(x, shape)
  y = Add(r, b)
})";
  ir::Graph plain = must_import(model);
  CHECK(tensor(plain, "b").role == ir::TensorRole::kParameter);
  CHECK_FALSE(tensor(plain, "b").has_data());
  CHECK(tensor(plain, "shape").role == ir::TensorRole::kConstant);
  CHECK(tensor(plain, "shape").int_values() == std::vector<int64_t>{2});
  ImportOptions weights;
  weights.load_weights = true;
  ir::Graph loaded = must_import(model, weights);
  CHECK(tensor(loaded, "b").float_values() == std::vector<double>{1.5, 2.5});
}

TEST_CASE("bad text input gets one line naming the file and the node") {
  SUBCASE("shape inference failing on one node") {
    CHECK(error_of(import_text(R"(
g (float[2,4] x, float[5,3] w) => (float[2,3] y) { t = MatMul(x, w)  y = Relu(t) })")) ==
          "test.onnxtxt: node 'MatMul_0' (MatMul): shape inference failed: incompatible "
          "dimensions for matrix multiplication");
  }
  SUBCASE("a cycle") {
    CHECK(error_of(import_text(R"(
g (float[2] x) => (float[2] y) { a = Add(x, b)  b = Relu(a)  y = Relu(b) })")) ==
          "test.onnxtxt: node 'Add_0' (Add): the graph has a cycle through this node");
  }
  SUBCASE("a node reading an undefined tensor") {
    CHECK(error_of(import_text(R"(
g (float[2,4] x) => (float[2,3] y) { y = MatMul(x, w) })")) ==
          "test.onnxtxt: node 'MatMul_0' (MatMul): input 'w' is not defined (no node produces it "
          "and it is not a graph input or initializer)");
  }
  SUBCASE("a negative dimension") {
    CHECK(error_of(import_text(R"(
g (float[-3,4] x) => (float[-3,4] y) { y = Relu(x) })")) ==
          "test.onnxtxt: tensor 'x' has negative dimension -3 in shape [-3,4]");
  }
  SUBCASE("a dimension whose byte size overflows") {
    CHECK(error_of(import_text(R"(
g (float[2,4] x) => (float[2,4] y) <float[4611686018427387904,4] w = {}> { y = Relu(x) })")) ==
          "test.onnxtxt: tensor 'w' with shape [4611686018427387904,4] is too large: its byte "
          "size overflows");
  }
  SUBCASE("duplicate initializer names") {
    CHECK(error_of(import_text(R"(
g (float[2] x) => (float[2] y) <float[2] w = {}, float[2] w = {}> { y = Add(x, w) })")) ==
          "test.onnxtxt: duplicate initializer name 'w'");
  }
  SUBCASE("a tensor produced twice") {
    CHECK(error_of(import_text(R"(
g (float[2] x) => (float[2] y) { y = Relu(x)  y = Neg(x) })")) ==
          "test.onnxtxt: node 'Neg_1' (Neg): output 'y' is also produced by node 'Relu_0'");
  }
  SUBCASE("an unknown operator") {
    CHECK(error_of(import_text("g (float[2] x) => (float[2] y) { y = Rleu(x) }")) ==
          "test.onnxtxt: node 'Rleu_0' (Rleu): unknown operator 'Rleu' in opset 17");
  }
  SUBCASE("unsupported IR version") {
    CHECK(error_of(import_model_text(
              "<ir_version: 99, opset_import: [\"\" : 17]> g (float[2] x) => (float[2] y) { y "
              "= Relu(x) }",
              "test.onnxtxt")) == "test.onnxtxt: unsupported IR version 99 (supported: 3 to 8)");
  }
  SUBCASE("unsupported opset version") {
    CHECK(error_of(import_model_text(
              "<ir_version: 8, opset_import: [\"\" : 19]> g (float[2] x) => (float[2] y) { y = "
              "Relu(x) }",
              "test.onnxtxt")) ==
          "test.onnxtxt: unsupported opset version 19 (supported: 7 to 18)");
    CHECK(error_of(import_model_text(
              "<ir_version: 8, opset_import: [\"\" : 6]> g (float[2] x) => (float[2] y) { y = "
              "Relu(x) }",
              "test.onnxtxt")) == "test.onnxtxt: unsupported opset version 6 (supported: 7 to 18)");
  }
  SUBCASE("a syntax error shows line and column") {
    CHECK(error_of(import_text("g (float[2] x) => (float[2] y) {\n  y = Relu(x\n}")) ==
          "test.onnxtxt:4:1: expected character ) not found (in '}')");
  }
  SUBCASE("empty text") {
    CHECK(error_of(import_model_text("  \n", "test.onnxtxt")) == "test.onnxtxt: file is empty");
  }
  SUBCASE("a declared output shape that disagrees with the computed one") {
    CHECK(error_of(import_text("g (float[2,4] x) => (float[2,5] y) { y = Relu(x) }")) ==
          "test.onnxtxt: graph output 'y' is declared with shape [2,5] but computes [2,4]");
  }
  SUBCASE("a Reshape whose element counts differ") {
    CHECK(error_of(import_text(R"(
g (float[2,4] x) => (float[3,3] y) <int64[2] s = {3, 3}> { y = Reshape(x, s) })")) ==
          "test.onnxtxt: node 'Reshape_0' (Reshape): cannot reshape [2,4] (8 elements) to [3,3] "
          "(9 elements)");
  }
}

TEST_CASE("bad files get one line naming the file") {
  TempDir dir;
  std::string missing = (dir.path / "no_such_model.onnx").string();
  CHECK(error_of(import_model(missing)) == missing + ": no such file");

  fs::path empty = dir.write("empty.onnx", "");
  CHECK(error_of(import_model(empty.string())) == empty.string() + ": file is empty");

  fs::path garbage = dir.write("garbage.onnx", "this is not a model\n");
  CHECK(error_of(import_model(garbage.string())) ==
        garbage.string() + ": is not an ONNX model: not a protobuf file (bad field at byte 0)");

  std::string whole = external_weight_model("w.bin").SerializeAsString();
  fs::path truncated = dir.write("truncated.onnx", whole.substr(0, whole.size() / 2));
  CHECK(
      error_of(import_model(truncated.string())).find(truncated.string() + ": file is truncated") ==
      0);

  fs::create_directory(dir.path / "folder.onnx");
  CHECK(error_of(import_model((dir.path / "folder.onnx").string())) ==
        (dir.path / "folder.onnx").string() + ": is a directory, not a model file");

  fs::path text = dir.write("bad.onnxtxt", "");
  CHECK(error_of(import_model(text.string())) == text.string() + ": file is empty");
}

TEST_CASE("duplicate node names and generated names that would collide") {
  onnx::ModelProto m = external_weight_model("w.bin");
  onnx::GraphProto* g = m.mutable_graph();
  // Two nodes named alike: an error naming the node.
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("mm");
  relu->add_input("y");
  relu->add_output("z");
  TempDir dir;
  fs::path path = dir.write("dup.onnx", m.SerializeAsString());
  CHECK(error_of(import_model(path.string())) ==
        path.string() + ": node 'mm' (Relu): duplicate node name");

  // An unnamed node whose generated name another node already has gets a distinct one.
  relu->set_name("");
  g->mutable_node(0)->set_name("Relu_1");
  g->add_output()->set_name("z");  // keeps the Relu alive
  fs::path renamed = dir.write("renamed.onnx", m.SerializeAsString());
  auto graph = import_model(renamed.string());
  REQUIRE_MESSAGE(graph, error_of(graph));
  CHECK(graph->find_op("Relu_1"));
  CHECK(graph->find_op("Relu_1_"));
}

TEST_CASE("IR version 3 models list initializers as inputs; inline raw data loads on request") {
  onnx::ModelProto m = external_weight_model("unused");
  m.set_ir_version(3);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* w = g->mutable_initializer(0);
  w->clear_external_data();
  w->set_data_location(onnx::TensorProto::DEFAULT);
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i);
  w->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), 48));
  onnx::ValueInfoProto* as_input = g->add_input();
  as_input->set_name("w");
  *as_input->mutable_type() = g->input(0).type();
  as_input->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(
      4);
  as_input->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(
      3);
  TempDir dir;
  fs::path path = dir.write("ir3.onnx", m.SerializeAsString());
  auto plain = import_model(path.string());
  REQUIRE_MESSAGE(plain, error_of(plain));
  CHECK(plain->inputs.size() == 1);
  CHECK(tensor(*plain, "w").role == ir::TensorRole::kParameter);
  CHECK_FALSE(tensor(*plain, "w").has_data());
  ImportOptions weights;
  weights.load_weights = true;
  auto loaded = import_model(path.string(), weights);
  REQUIRE_MESSAGE(loaded, error_of(loaded));
  CHECK(tensor(*loaded, "w").float_values()[11] == 11.0);
}

TEST_CASE("external data: a missing file still imports; weights are read only on request") {
  TempDir dir;
  fs::path model = dir.write("model.onnx", external_weight_model("w.bin").SerializeAsString());
  auto g = import_model(model.string());
  REQUIRE_MESSAGE(g, error_of(g));
  const ir::Tensor& w = tensor(*g, "w");
  CHECK(w.role == ir::TensorRole::kParameter);
  REQUIRE(w.external.has_value());
  CHECK(w.external->location == "w.bin");
  CHECK(w.external->offset == 0);
  CHECK(w.external->length == 48);
  CHECK_FALSE(w.has_data());

  ImportOptions weights;
  weights.load_weights = true;
  CHECK(error_of(import_model(model.string(), weights)) ==
        model.string() +
            ": tensor 'w': cannot open external data file 'w.bin': No such file or directory");

  std::string bytes(48, '\0');
  for (int i = 0; i < 12; ++i) {
    float v = static_cast<float>(i) * 0.5f;
    std::memcpy(bytes.data() + 4 * i, &v, 4);
  }
  dir.write("w.bin", bytes);
  auto loaded = import_model(model.string(), weights);
  REQUIRE_MESSAGE(loaded, error_of(loaded));
  std::vector<double> values = tensor(*loaded, "w").float_values();
  REQUIRE(values.size() == 12);
  CHECK(values[3] == 1.5);
}

TEST_CASE("external data locations outside the model's folder are rejected, never opened") {
  TempDir dir;
  fs::create_directory(dir.path / "model");
  fs::path secret = dir.write("secret.bin", std::string(48, 'x'));
  // Watch the file outside the model's folder: any open or read of it is an event.
  int watch_fd = ::inotify_init1(IN_NONBLOCK);
  REQUIRE(watch_fd >= 0);
  REQUIRE(::inotify_add_watch(watch_fd, secret.c_str(), IN_OPEN | IN_ACCESS) >= 0);

  ImportOptions weights;
  weights.load_weights = true;
  for (const std::string& location :
       {std::string("../secret.bin"), secret.string(), std::string("sub/../../secret.bin")}) {
    CAPTURE(location);
    fs::path model =
        dir.write("model/model.onnx", external_weight_model(location).SerializeAsString());
    for (const ImportOptions& options : {ImportOptions{}, weights})
      CHECK(error_of(import_model(model.string(), options)) ==
            model.string() + ": tensor 'w': external data location '" + location +
                "' is outside the model's folder");
  }
  char events[4096];
  CHECK(::read(watch_fd, events, sizeof events) < 0);  // EAGAIN: nothing opened it
  ::close(watch_fd);

  // A symbolic link inside the folder that leads outside it is caught when weights are read.
  fs::create_symlink(secret, dir.path / "model" / "link.bin");
  fs::path model =
      dir.write("model/model.onnx", external_weight_model("link.bin").SerializeAsString());
  CHECK(import_model(model.string()));  // planning never follows it
  CHECK(error_of(import_model(model.string(), weights)) ==
        model.string() +
            ": tensor 'w': external data location 'link.bin' is outside the model's folder");
}

TEST_CASE("an external integer constant is read only when folding needs it") {
  auto model_with_external_shape = [](bool used_by_reshape) {
    onnx::ModelProto m = external_weight_model("w.bin");
    onnx::GraphProto* g = m.mutable_graph();
    onnx::TensorProto* s = g->add_initializer();
    s->set_name("s");
    s->set_data_type(onnx::TensorProto::INT64);
    s->add_dims(2);
    s->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = s->add_external_data();
    kv->set_key("location");
    kv->set_value("shape.bin");
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(used_by_reshape ? "Reshape" : "Gather");
    n->add_input(used_by_reshape ? "y" : "y");
    n->add_input("s");
    n->add_output("z");
    g->mutable_output(0)->set_name("z");
    g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    return m;
  };
  TempDir dir;
  // Gather only needs the indices' shape: the missing file does not matter.
  fs::path gather = dir.write("gather.onnx", model_with_external_shape(false).SerializeAsString());
  auto g = import_model(gather.string());
  REQUIRE_MESSAGE(g, error_of(g));
  CHECK(tensor(*g, "z").shape == std::vector<int64_t>{2, 3});
  // Reshape needs the values to know its output shape.
  fs::path reshape = dir.write("reshape.onnx", model_with_external_shape(true).SerializeAsString());
  CHECK(error_of(import_model(reshape.string())) ==
        reshape.string() +
            ": node 'Reshape_1' (Reshape): tensor 's': cannot open external data file "
            "'shape.bin': No such file or directory");
  std::string bytes(16, '\0');
  int64_t dims[2] = {3, 2};
  std::memcpy(bytes.data(), dims, 16);
  dir.write("shape.bin", bytes);
  auto folded = import_model(reshape.string());
  REQUIRE_MESSAGE(folded, error_of(folded));
  CHECK(tensor(*folded, "z").shape == std::vector<int64_t>{3, 2});
}

TEST_CASE("the examples import") {
  std::map<std::string, int64_t> params = {
      {"mlp", 3159050}, {"small_cnn", 5610}, {"transformer_block", 3152384}, {"lstm", 652264}};
  for (const auto& entry : params) {
    const std::string& name = entry.first;  // not a binding: doctest's macros are lambdas
    const int64_t count = entry.second;
    CAPTURE(name);
    auto g = import_model((testing::source_dir() / "examples" / (name + ".onnxtxt")).string());
    REQUIRE_MESSAGE(g, error_of(g));
    CHECK(g->name == name);
    CHECK(ir::graph_stats(*g).parameter_count == count);
    check_all_static(*g);
  }
}

// ---------------------------------------------------------------------------------------------
// The shared models

struct SharedModel {
  const char* file;
  int64_t params;                  // MANIFEST.md's "params" column
  std::map<std::string, int> ops;  // after folding
};

const std::vector<SharedModel>& shared_models() {
  static const std::vector<SharedModel> models = {
      {"alexnet.onnx",
       61100840,
       {{"Relu", 7}, {"Conv", 5}, {"MaxPool", 3}, {"Gemm", 3}, {"AveragePool", 1}, {"Flatten", 1}}},
      {"bert_base.onnx",
       132066618,
       {{"Add", 124},
        {"MatMul", 61},
        {"Reshape", 60},
        {"ReduceMean", 50},
        {"Transpose", 50},
        {"Div", 49},
        {"Mul", 49},
        {"Slice", 36},
        {"Pow", 25},
        {"Sqrt", 25},
        {"Sub", 25},
        {"Erf", 12},
        {"Gemm", 12},
        {"Softmax", 12},
        {"Gather", 1}}},
      {"gpt2_small.onnx",
       162447360,
       {{"Add", 135},
        {"MatMul", 61},
        {"Mul", 61},
        {"Reshape", 60},
        {"ReduceMean", 50},
        {"Transpose", 50},
        {"Div", 49},
        {"Slice", 36},
        {"Pow", 25},
        {"Sqrt", 25},
        {"Sub", 25},
        {"Erf", 12},
        {"Gemm", 12},
        {"Softmax", 12},
        {"Gather", 1}}},
      {"inception_v3.onnx",
       23817352,
       {{"Conv", 94},
        {"Relu", 94},
        {"Concat", 11},
        {"Pad", 9},
        {"AveragePool", 9},
        {"MaxPool", 4},
        {"GlobalAveragePool", 1},
        {"Flatten", 1},
        {"Gemm", 1}}},
      {"lstm_lm.onnx",
       54077200,
       {{"Slice", 8}, {"LSTM", 4}, {"Squeeze", 4}, {"Gather", 1}, {"MatMul", 1}, {"Add", 1}}},
      {"lstm_lm_unrolled.onnx",
       54077200,
       {{"Sigmoid", 240},
        {"Mul", 240},
        {"Add", 161},
        {"Gemm", 160},
        {"Tanh", 160},
        {"Split", 82},
        {"Gather", 21},
        {"Unsqueeze", 20},
        {"Squeeze", 8},
        {"Concat", 1},
        {"MatMul", 1}}},
      {"mlp_8192x4.onnx", 268468224, {{"Gemm", 4}, {"Relu", 3}}},
      {"resnet50.onnx",
       25530472,
       {{"Conv", 53},
        {"Relu", 49},
        {"Add", 16},
        {"MaxPool", 1},
        {"GlobalAveragePool", 1},
        {"Flatten", 1},
        {"Gemm", 1}}},
      {"vgg16.onnx",
       138357544,
       {{"Relu", 15},
        {"Conv", 13},
        {"MaxPool", 5},
        {"Gemm", 3},
        {"AveragePool", 1},
        {"Flatten", 1}}},
  };
  return models;
}

TEST_CASE("every shared model imports fast, static, folded, with the manifest's parameters") {
  PLANNER_REQUIRE_SHARED_MODELS();
  for (const SharedModel& m : shared_models()) {
    CAPTURE(m.file);
    auto start = std::chrono::steady_clock::now();
    ImportOptions faithful;  // the file's own operators, as the manifest counts them
    faithful.unflatten_linear = false;
    faithful.fuse_layer_norm = false;
    auto g = import_model((testing::shared_models_dir() / m.file).string(), faithful);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE_MESSAGE(g, error_of(g));
    CHECK(seconds < 1.0 * testing::kTimeScale);
    ir::GraphStats stats = ir::graph_stats(*g);
    CHECK(stats.parameter_count == m.params);
    CHECK(stats.op_counts == m.ops);
    for (const char* shape_op : {"Shape", "Constant", "ConstantOfShape", "Range", "Cast"})
      CHECK(stats.op_counts.count(shape_op) == 0);
    check_all_static(*g);
    // Every parameter records where its (absent) external bytes are, none was read.
    for (const ir::Tensor& t : g->tensors()) {
      if (t.role != ir::TensorRole::kParameter) continue;
      CHECK(t.external.has_value());
      CHECK_FALSE(t.has_data());
    }
  }
}

TEST_CASE("shapes of the transformers agree with the exporter's value_info") {
  PLANNER_REQUIRE_SHARED_MODELS();
  for (const char* file : {"bert_base.onnx", "gpt2_small.onnx", "lstm_lm_unrolled.onnx"}) {
    CAPTURE(file);
    fs::path path = testing::shared_models_dir() / file;
    ImportOptions faithful;  // the exporter's tensors, unrewritten
    faithful.unflatten_linear = false;
    faithful.fuse_layer_norm = false;
    auto g = import_model(path.string(), faithful);
    REQUIRE_MESSAGE(g, error_of(g));
    onnx::ModelProto m;
    std::ifstream in(path, std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    int compared = 0;
    for (const auto& vi : m.graph().value_info()) {
      auto id = g->find_tensor(vi.name());
      if (!id || g->tensor(*id).role != ir::TensorRole::kActivation) continue;
      std::vector<int64_t> declared;
      for (const auto& d : vi.type().tensor_type().shape().dim()) declared.push_back(d.dim_value());
      CAPTURE(vi.name());
      CHECK(g->tensor(*id).shape == declared);
      ++compared;
    }
    CHECK(compared > 500);
  }
  // The attention Slices in particular: ONNX shape inference alone leaves them unknown.
  auto bert = import_model((testing::shared_models_dir() / "bert_base.onnx").string());
  REQUIRE(bert);
  CHECK(tensor(*bert, "/encoder/layers.0/self_attn/Slice_output_0").shape ==
        std::vector<int64_t>{128, 8, 768});
}

TEST_CASE("gpt2_small keeps the tied embedding and LM head as two parameters") {
  PLANNER_REQUIRE_SHARED_MODELS();
  auto g = import_model((testing::shared_models_dir() / "gpt2_small.onnx").string());
  REQUIRE_MESSAGE(g, error_of(g));
  CHECK(tensor(*g, "wte.weight").shape == std::vector<int64_t>{50257, 768});
  CHECK(tensor(*g, "onnx::MatMul_1922").shape == std::vector<int64_t>{768, 50257});
  // The causal masks are constants with their values, not parameters.
  const ir::Tensor& mask = tensor(*g, "/blocks/layers.0/self_attn/Constant_12_output_0");
  CHECK(mask.role == ir::TensorRole::kConstant);
  CHECK(mask.shape == std::vector<int64_t>{1, 256, 256});
  CHECK(mask.has_data());
}

TEST_CASE("a truncated copy of a shared model is reported as truncated") {
  PLANNER_REQUIRE_SHARED_MODELS();
  std::ifstream in(testing::shared_models_dir() / "resnet50.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TempDir dir;
  fs::path cut = dir.write("resnet50.onnx", bytes.substr(0, 1000));
  CHECK(error_of(import_model(cut.string())) ==
        cut.string() +
            ": file is truncated: a field at byte 19 needs 39254 bytes but the file ends at byte "
            "1000");
}

TEST_CASE("ScatterND on constants folds (Hugging Face Swin's shifted-window mask)") {
  // mask[:, 1:3, :] = 7 written as ScatterND, as `img_mask[:, h, w, :] = count` exports.
  auto g = import_model_text(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[1,4,2] x) => (float[1,4,2] y) {
  shape = Constant<value = int64[3] {1, 4, 2}>()
  zero = ConstantOfShape<value = float[1] {0.0}>(shape)
  idx = Constant<value = int64[1,2,2] {0, 1, 0, 2}>()
  upd = Constant<value = float[1,2,2] {7.0, 7.0, 7.0, 7.0}>()
  mask = ScatterND(zero, idx, upd)
  y = Add(x, mask)
})",
                             "m.onnxtxt");
  REQUIRE_MESSAGE(g.has_value(), (g ? "" : g.error().message()));
  REQUIRE(g->num_ops() == 1);
  const ir::Tensor& mask = g->tensor(g->op(0).inputs[1]);
  REQUIRE(mask.role == ir::TensorRole::kConstant);
  CHECK(mask.float_values() == std::vector<double>{0, 0, 7, 7, 7, 7, 0, 0});
}

}  // namespace
}  // namespace planner::importers
