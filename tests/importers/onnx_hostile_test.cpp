// Tests for the importer's defences (importers/onnx_checks.cpp, importers/onnx_import.cpp,
// importers/shape_rules.cpp): inputs that crashed, hung or overflowed before give one-line
// errors. The hostile inputs are generated here: nothing large is committed.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include "importers/onnx_checks.h"
#include "importers/onnx_import.h"
#include "ir/op_stats.h"

namespace planner::importers {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHeader = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

std::string error_of(const Expected<ir::Graph>& g) {
  if (g) return "<imported without error>";
  return g.error().message();
}

std::string import_error(const std::string& body, const ImportOptions& options = {}) {
  return error_of(import_model_text(kHeader + body, "m.onnxtxt", options));
}

// A fresh, empty folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "planner_hostile_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST_CASE("conv and pool attributes are checked before ONNX's shape inference divides by them") {
  const std::string conv = "g (float[1,3,8,8] x) => (y) <float[4,3,3,3] w = {}> { y = ";
  CHECK(import_error(conv + "Conv<strides = [0, 0]>(x, w) }") ==
        "m.onnxtxt: node 'Conv_0' (Conv): shape inference failed: attribute 'strides' must hold "
        "values of at least 1, got [0, 0]");
  CHECK(import_error(conv + "Conv<dilations = [1, -1]>(x, w) }")
            .find("attribute 'dilations' must hold values of at least 1, got [1, -1]") !=
        std::string::npos);
  CHECK(import_error(conv + "Conv<kernel_shape = [3, 0]>(x, w) }")
            .find("attribute 'kernel_shape' must hold values of at least 1") != std::string::npos);
  CHECK(import_error(conv + "Conv<pads = [1, 1, -1, 1]>(x, w) }")
            .find("attribute 'pads' must hold values of at least 0, got [1, 1, -1, 1]") !=
        std::string::npos);
  CHECK(import_error(conv + "Conv<pads = [1, 1, 1]>(x, w) }")
            .find("attribute 'pads' has 3 values, [1, 1, 1], but the input has 2 spatial "
                  "dimensions (pads needs 4)") != std::string::npos);
  CHECK(import_error(conv + "Conv<strides = [1, 1, 1]>(x, w) }")
            .find("attribute 'strides' has 3 values") != std::string::npos);
  CHECK(import_error(conv + "Conv<group = 0>(x, w) }")
            .find("attribute 'group' must be at least 1, got 0") != std::string::npos);
  CHECK(import_error("g (float[1,6,8,8] x) => (y) <float[4,3,3,3] w = {}> { y = Conv<group = "
                     "4>(x, w) }")
            .find("group 4 does not divide the 6 input channels") != std::string::npos);
  CHECK(import_error("g (float[1,3,8,8] x) => (y) <float[4,3,3] w = {}> { y = Conv(x, w) }") ==
        "m.onnxtxt: node 'Conv_0' (Conv): shape inference failed: weight has rank 3 but the "
        "input has rank 4");
  CHECK(import_error("g (float[1,3,8,8] x) => (y) <float[4,3,3,3,3] w = {}> { y = Conv(x, w) }")
            .find("weight has rank 5 but the input has rank 4") != std::string::npos);
  CHECK(import_error("g (float[1,3,8,8] x) => (y) <float[3,4,3,3] w = {}> { y = "
                     "ConvTranspose<strides = [0, 2]>(x, w) }")
            .find("node 'ConvTranspose_0' (ConvTranspose): shape inference failed: attribute "
                  "'strides' must hold values of at least 1") != std::string::npos);
  const std::string pool = "g (float[1,3,8,8] x) => (y) { y = ";
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
    INFO(op);
    CHECK(import_error(pool + op + "<kernel_shape = [2, 2], strides = [0, 1]>(x) }")
              .find(std::string("node '") + op + "_0' (" + op +
                    "): shape inference failed: attribute 'strides' must hold values of at "
                    "least 1, got [0, 1]") != std::string::npos);
    CHECK(import_error(pool + op + "<kernel_shape = [2, -2]>(x) }")
              .find("attribute 'kernel_shape' must hold values of at least 1") !=
          std::string::npos);
    CHECK(import_error(pool + op + "<kernel_shape = [2]>(x) }")
              .find("attribute 'kernel_shape' has 1 values") != std::string::npos);
  }
  // Valid attributes still import.
  auto ok = import_model_text(
      kHeader + conv + "Conv<strides = [2, 2], pads = [1, 1, 1, 1]>(x, w) }", "m.onnxtxt");
  REQUIRE_MESSAGE(ok, error_of(ok));
  CHECK(ok->tensor(*ok->find_tensor("y")).shape == std::vector<int64_t>{1, 4, 4, 4});
}

TEST_CASE("MaxUnpool, MaxRoiPool and GatherND are checked before their ONNX rules index shapes") {
  // Indices of rank 1: ONNX read their axis 1 (SIGSEGV).
  CHECK(import_error("g (float[1,3,3,3] x) => (y) <int64[4] i = {0, 1, 2, 3}> { y = "
                     "MaxUnpool<kernel_shape = [2, 3], strides = [3, 1]>(x, i) }") ==
        "m.onnxtxt: node 'MaxUnpool_0' (MaxUnpool): shape inference failed: the indices have "
        "rank 1 but the input has rank 4");
  CHECK(import_error("g (float[1,3,4,4] x, float[2,5] r) => (y) { y = MaxRoiPool<pooled_shape = "
                     "[2]>(x, r) }")
            .find("attribute 'pooled_shape' has 1 values") != std::string::npos);
  CHECK(import_error("g (float[4,8,3] x) => (y) <int64[2] i = {0, 1}> { y = GatherND<batch_dims "
                     "= -7>(x, i) }") ==
        "m.onnxtxt: node 'GatherND_0' (GatherND): shape inference failed: attribute 'batch_dims' "
        "must not be negative, got -7");
  CHECK(import_error("g (float[4,8,3] x) => (y) <int64[4,5] i = {}> { y = GatherND(x, i) }")
            .find("the indices' last dimension 5 must be 1 to 3") != std::string::npos);
}

TEST_CASE("sizes near INT64_MAX are errors, not wrapped shapes") {
  // Pads of 2^62 on both sides: the padded extent overflows int64.
  CHECK(import_error("g (float[1,3,8,8] x) => (y) <float[4,3,3,3] w = {}> { y = Conv<pads = "
                     "[4611686018427387904, 0, 4611686018427387904, 0]>(x, w) }")
            .find("node 'Conv_0' (Conv)") != std::string::npos);
  // Tile repeats that overflow the output extent.
  std::string tile = import_error(
      "g (float[3,4] x) => (y) <int64[2] r = {4611686018427387904, 1}> { y = Tile(x, r) }");
  CHECK(tile.find("m.onnxtxt: node 'Tile_0' (Tile): ") == 0);
  CHECK(tile.find('\n') == std::string::npos);
}

TEST_CASE("the byte totals of op_stats saturate instead of wrapping") {
  auto g =
      import_model_text(kHeader + std::string("g (float[1024,1024] x) => (y) <float[1024,1024] "
                                              "w1 = {}, float[1024,1024] w2 = {}, float[1024,1024] "
                                              "w3 = {}> { a = MatMul(x, w1)\n b = MatMul(a, w2)\n "
                                              "y = MatMul(b, w3) }"),
                        "m.onnxtxt", [] {
                          ImportOptions o;
                          o.shrink[1024] = int64_t{1} << 30;
                          return o;
                        }());
  REQUIRE_MESSAGE(g, error_of(g));
  ir::GraphStats s = ir::graph_stats(*g);
  CHECK(s.parameter_bytes == INT64_MAX);
  CHECK(s.activation_bytes == INT64_MAX);
  CHECK(s.parameter_count == 3 * (int64_t{1} << 60));
  CHECK(ir::op_stats(*g, 0).bytes_read == INT64_MAX);
}

TEST_CASE("data propagation through Mod, Shape and Trilu does not crash") {
  auto g = import_model_text(kHeader + std::string(R"(
g (float[4,6] x) => (y) <int64[1] k = {5}> {
  s = Shape(x)
  m = Mod(s, k)
  t = Shape(m)
  d = Mod(t, k)
  y = Trilu(x, d)
})"),
                             "m.onnxtxt");
  CHECK(g.has_value() != error_of(g).empty());  // either way: no signal, one line
  CHECK(error_of(g).find('\n') == std::string::npos);
}

TEST_CASE("model text: NUL bytes and deep nesting are refused before ONNX's parser") {
  CHECK(check_model_text(std::string("g () => () {}\n\0tail", 19), "m.onnxtxt").error().message() ==
        "m.onnxtxt:2:1: the model text holds a NUL byte");
  std::string nul = kHeader + std::string("g (float[2] x) => (float[2] y) {\n y = Relu(x)\n}\n");
  nul += std::string(1, '\0') + "y = Garbage(x)\n";
  CHECK(error_of(import_model_text(nul, "m.onnxtxt")) ==
        "m.onnxtxt:5:1: the model text holds a NUL byte");

  // 30k nested If subgraphs: ONNX's recursive parser overflowed the stack.
  std::string nested = kHeader + std::string("g (bool c, float[2] x) => (float[2] y) {\n");
  for (int i = 0; i < 30000; ++i) nested += "y = If(c) <then_branch = t () => (float[2] y) {\n";
  CHECK(error_of(import_model_text(nested, "m.onnxtxt")) ==
        "m.onnxtxt:65:40: the model text is nested more than 64 levels deep");
  CHECK(!check_model_text(std::string("g <s = \"a\\\0\"> () => () {}", 21), "m").has_value());
  // Brackets in strings and comments are not structure.
  CHECK(check_model_text("# {{{{{{{{\ng <s = \"((((((\"> () => () {}", "m").has_value());
}

// A model reading x[2,4] @ w[4,3], with w stored as external data in `location`.
onnx::ModelProto external_model(const std::string& location, const std::string& offset = "0") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("ext");
  auto value = [](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                  const std::string& name, std::vector<int64_t> dims) {
    onnx::ValueInfoProto* vi = list->Add();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(g->mutable_input(), "x", {2, 4});
  value(g->mutable_output(), "y", {2, 3});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(3);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, v] : {std::pair<const char*, std::string>{"location", location},
                        {"offset", offset},
                        {"length", "48"}}) {
    auto* kv = w->add_external_data();
    kv->set_key(key);
    kv->set_value(v);
  }
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("MatMul");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  return m;
}

std::string write_model(const fs::path& path, const onnx::ModelProto& m) {
  std::ofstream out(path, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&out));
  return path.string();
}

TEST_CASE("an external-data location that is a FIFO is refused at once, never waited on") {
  TempDir dir;
  REQUIRE(::mkfifo((dir.path / "w.bin").c_str(), 0600) == 0);
  const std::string model = write_model(dir.path / "model.onnx", external_model("w.bin"));
  ImportOptions weights;
  weights.load_weights = true;
  // In a child with an alarm: a blocking open would hang the test otherwise.
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    alarm(20);
    auto g = import_model(model, weights);
    _exit(!g && g.error().message() ==
                      model + ": tensor 'w': external data file 'w.bin' is not a regular file"
              ? 0
              : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK_MESSAGE(WIFEXITED(status), "the import was killed (it blocked on the FIFO)");
  CHECK(WEXITSTATUS(status) == 0);
  // In this process too, for the message.
  CHECK(error_of(import_model(model, weights)) ==
        model + ": tensor 'w': external data file 'w.bin' is not a regular file");
  // A folder in its place.
  fs::create_directory(dir.path / "dir.bin");
  const std::string model2 = write_model(dir.path / "model2.onnx", external_model("dir.bin"));
  CHECK(error_of(import_model(model2, weights)) ==
        model2 + ": tensor 'w': external data file 'dir.bin' is not a regular file");
}

TEST_CASE("external-data offsets near INT64_MAX are errors, not overflows") {
  TempDir dir;
  std::ofstream(dir.path / "w.bin", std::ios::binary) << std::string(48, '\0');
  ImportOptions weights;
  weights.load_weights = true;
  const std::string model =
      write_model(dir.path / "model.onnx", external_model("w.bin", "9223372036854775800"));
  CHECK(error_of(import_model(model, weights)) ==
        model +
            ": tensor 'w': external data file 'w.bin' is too short (48 bytes; needs 48 at "
            "offset 9223372036854775800)");
  const std::string fine = write_model(dir.path / "fine.onnx", external_model("w.bin"));
  auto g = import_model(fine, weights);
  CHECK_MESSAGE(g.has_value(), error_of(g));
}

TEST_CASE("--batch on a model without a dynamic batch dimension is an error") {
  ImportOptions batch;
  batch.batch = 4;
  CHECK(import_error("g (float[8,16] x) => (y) { y = Relu(x) }", batch) ==
        "m.onnxtxt: --batch 4: the model's inputs have no dynamic batch dimension to bind (its "
        "inputs are static)");
  // A dimension left unbound is reported first, as before.
  CHECK(import_error("g (float[8,seq] x) => (y) { y = Relu(x) }", batch) ==
        "m.onnxtxt: input 'x' has dynamic dimension 'seq': bind it with --batch N or --dim "
        "NAME=VALUE");
  ImportOptions seq = batch;
  seq.dims["seq"] = 3;
  CHECK(import_error("g (float[8,seq] x) => (y) { y = Relu(x) }", seq) ==
        "m.onnxtxt: --batch 4: the model's inputs have no dynamic batch dimension to bind (its "
        "dynamic dimensions, 'seq', are not named like a batch: bind them with --dim "
        "NAME=VALUE)");
  // A batch dimension binds as before; a batch read back from a plan is ignored when unused.
  auto g = import_model_text(kHeader + std::string("g (float[N,16] x) => (y) { y = Relu(x) }"),
                             "m.onnxtxt", batch);
  REQUIRE_MESSAGE(g, error_of(g));
  CHECK(g->tensor(*g->find_tensor("y")).shape == std::vector<int64_t>{4, 16});
  batch.batch_must_bind = false;
  CHECK(import_model_text(kHeader + std::string("g (float[8,16] x) => (y) { y = Relu(x) }"),
                          "m.onnxtxt", batch)
            .has_value());
}

}  // namespace
}  // namespace planner::importers
