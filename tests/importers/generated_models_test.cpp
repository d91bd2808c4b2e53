// Generated hostile models for importers/onnx_import.cpp: a few thousand small random ONNX
// models built in code, with odd attribute values (zero, negative, huge), ranks that disagree
// and shape arithmetic that ONNX's data propagation follows. Each is imported in a child
// process: the import must end with a graph or a one-line error, never with a signal.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <onnx/defs/printer.h>
#include <onnx/onnx_pb.h>

#include "importers/onnx_import.h"

namespace planner::importers {
namespace {

namespace fs = std::filesystem;

// Values an exporter would never write, and the ordinary ones.
constexpr int64_t kOdd[] = {INT64_MIN, -7, -1, 0, 0, 1, 1, 1, 2, 2, 3, 5, 1LL << 40, INT64_MAX};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  onnx::ModelProto model() {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(pick({11, 13, 17}));
    g_ = m.mutable_graph();
    g_->set_name("generated");
    names_ = 0;
    std::vector<int64_t> dims;
    int rank = below(6);
    for (int i = 0; i < rank; ++i) dims.push_back(pick({0, 1, 2, 3, 4, 8}));
    std::string cur = "x";
    value(g_->mutable_input(), cur, dims);
    int ops = 1 + below(4);
    for (int i = 0; i < ops; ++i) cur = node(cur, rank);
    value(g_->mutable_output(), cur, {}, /*shaped=*/false);
    return m;
  }

 private:
  int below(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  int64_t pick(std::initializer_list<int64_t> v) {
    return *(v.begin() + below(static_cast<int>(v.size())));
  }
  int64_t odd() { return below(3) == 0 ? kOdd[below(std::size(kOdd))] : pick({1, 1, 2, 3}); }
  std::vector<int64_t> odd_list(int usual_size) {
    int n = below(4) == 0 ? below(7) : usual_size;
    std::vector<int64_t> v;
    for (int i = 0; i < n; ++i) v.push_back(odd());
    return v;
  }
  std::string fresh() { return "t" + std::to_string(names_++); }

  void value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
             const std::string& name, const std::vector<int64_t>& dims, bool shaped = true) {
    onnx::ValueInfoProto* vi = list->Add();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    if (shaped) {
      auto* shape = tt->mutable_shape();
      for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
    }
  }

  // A float weight (declared, values absent: planning never reads them) of random shape.
  std::string weight(int rank) {
    std::string name = fresh();
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) {
      int64_t d = pick({0, 1, 2, 3, 4});
      t->add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i) t->add_float_data(0.5f);
    return name;
  }

  // An int64 initializer holding odd values.
  std::string ints(const std::vector<int64_t>& values) {
    std::string name = fresh();
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return name;
  }

  void ints_attr(onnx::NodeProto* n, const char* name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  void int_attr(onnx::NodeProto* n, const char* name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  void string_attr(onnx::NodeProto* n, const char* name, const char* v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  // Each attribute is left out a third of the time.
  bool maybe() { return below(3) != 0; }

  std::string node(const std::string& in, int rank) {
    static const char* const kOps[] = {"Conv",
                                       "ConvTranspose",
                                       "MaxPool",
                                       "AveragePool",
                                       "LpPool",
                                       "Reshape",
                                       "Tile",
                                       "Pad",
                                       "Slice",
                                       "Transpose",
                                       "Expand",
                                       "Trilu",
                                       "ShapeMath",
                                       "Gather",
                                       "Split",
                                       "Flatten",
                                       "Squeeze",
                                       "Unsqueeze",
                                       "ReduceSum",
                                       "Softmax",
                                       "Resize",
                                       "DepthToSpace",
                                       "CumSum",
                                       "Concat",
                                       "MatMul",
                                       "Gemm",
                                       "TopK",
                                       "ConstantOfShape",
                                       "SpaceToDepth",
                                       "MaxUnpool",
                                       "GatherND",
                                       "OneHot",
                                       "Einsum",
                                       "GridSample",
                                       "Range",
                                       "Compress",
                                       "DFT",
                                       "LayerNormalization",
                                       "ReverseSequence",
                                       "RoiAlign",
                                       "Col2Im",
                                       "LRN"};
    const std::string op = kOps[below(std::size(kOps))];
    onnx::NodeProto* n = g_->add_node();
    std::string out = fresh();
    n->set_name(out + "_node");
    if (op == "ShapeMath") {
      // Shape -> Mod -> Trilu / Reshape: data propagation through integer arithmetic.
      n->set_op_type("Shape");
      n->add_input(in);
      std::string shape = fresh();
      n->add_output(shape);
      onnx::NodeProto* mod = g_->add_node();
      mod->set_op_type("Mod");
      mod->add_input(shape);
      mod->add_input(ints({odd()}));
      std::string m = fresh();
      mod->add_output(m);
      onnx::NodeProto* last = g_->add_node();
      last->set_op_type(pick({0, 1}) ? "Trilu" : "Reshape");
      last->add_input(in);
      last->add_input(m);
      last->add_output(out);
      return out;
    }
    n->set_op_type(op);
    n->add_input(in);
    n->add_output(out);
    if (!conv_or_pool(n, op, rank)) other_inputs(n, op, in, rank);
    return out;
  }

  // Inputs and attributes of the convolutions and poolings; false for any other operator.
  bool conv_or_pool(onnx::NodeProto* n, const std::string& op, int rank) {
    const int spatial = std::max(0, rank - 2);
    if (op == "Conv" || op == "ConvTranspose") {
      n->add_input(weight(below(4) == 0 ? below(6) : rank));
      if (maybe()) ints_attr(n, "strides", odd_list(spatial));
      if (maybe()) ints_attr(n, "dilations", odd_list(spatial));
      if (maybe()) ints_attr(n, "kernel_shape", odd_list(spatial));
      if (maybe()) ints_attr(n, "pads", odd_list(2 * spatial));
      if (maybe()) int_attr(n, "group", odd());
      if (op == "ConvTranspose" && maybe()) ints_attr(n, "output_padding", odd_list(spatial));
      if (op == "ConvTranspose" && !maybe()) ints_attr(n, "output_shape", odd_list(spatial));
      if (!maybe()) string_attr(n, "auto_pad", below(2) ? "SAME_UPPER" : "VALID");
    } else if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
      if (maybe()) ints_attr(n, "kernel_shape", odd_list(spatial));
      if (maybe()) ints_attr(n, "strides", odd_list(spatial));
      if (maybe() && op != "AveragePool") ints_attr(n, "dilations", odd_list(spatial));
      if (maybe()) ints_attr(n, "pads", odd_list(2 * spatial));
      if (!maybe()) int_attr(n, "ceil_mode", 1);
      if (!maybe()) string_attr(n, "auto_pad", below(2) ? "SAME_LOWER" : "VALID");
    } else {
      return false;
    }
    return true;
  }

  // Inputs and attributes of the operators other than convolutions and poolings.
  void other_inputs(onnx::NodeProto* n, const std::string& op, const std::string& in, int rank) {
    const int spatial = std::max(0, rank - 2);
    if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "ConstantOfShape") {
      if (op == "ConstantOfShape")
        n->set_input(0, ints(odd_list(rank)));
      else
        n->add_input(ints(odd_list(rank)));
    } else if (op == "Pad") {
      n->add_input(ints(odd_list(2 * rank)));
    } else if (op == "Slice") {
      n->add_input(ints(odd_list(1)));
      n->add_input(ints(odd_list(1)));
      if (maybe()) n->add_input(ints(odd_list(1)));
      if (n->input_size() == 4 && maybe()) n->add_input(ints(odd_list(1)));
    } else if (op == "Transpose") {
      if (maybe()) ints_attr(n, "perm", odd_list(rank));
    } else if (op == "Trilu") {
      if (maybe()) n->add_input(ints({odd()}));
      if (maybe()) int_attr(n, "upper", odd());
    } else if (op == "Gather") {
      n->add_input(ints(odd_list(2)));
      if (maybe()) int_attr(n, "axis", odd());
    } else if (op == "Split") {
      if (maybe()) n->add_input(ints(odd_list(2)));
      if (maybe()) int_attr(n, "axis", odd());
      n->add_output(fresh());
    } else if (op == "Flatten" || op == "Softmax" || op == "CumSum" || op == "Concat") {
      if (op == "CumSum") n->add_input(ints({odd()}));
      if (op == "Concat") n->add_input(in);
      if (maybe()) int_attr(n, "axis", odd());
    } else if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") {
      if (maybe()) n->add_input(ints(odd_list(1)));
    } else if (op == "Resize") {
      n->add_input("");
      n->add_input("");
      n->add_input(ints(odd_list(rank)));
    } else if (op == "DepthToSpace") {
      int_attr(n, "blocksize", odd());
    } else if (op == "MatMul" || op == "Gemm") {
      n->add_input(weight(below(4)));
      if (op == "Gemm" && maybe()) int_attr(n, "transB", odd());
    } else if (op == "SpaceToDepth") {
      int_attr(n, "blocksize", odd());
    } else if (op == "MaxUnpool") {
      n->add_input(ints(odd_list(rank)));
      if (maybe()) ints_attr(n, "kernel_shape", odd_list(spatial));
      if (maybe()) ints_attr(n, "strides", odd_list(spatial));
      if (maybe()) ints_attr(n, "pads", odd_list(2 * spatial));
      if (!maybe()) n->add_input(ints(odd_list(rank)));
    } else if (op == "GatherND") {
      n->add_input(ints(odd_list(2)));
      if (maybe()) int_attr(n, "batch_dims", odd());
    } else if (op == "OneHot") {
      n->set_input(0, ints(odd_list(2)));
      n->add_input(ints({odd()}));
      n->add_input(ints({0, 1}));
      if (maybe()) int_attr(n, "axis", odd());
    } else if (op == "Einsum") {
      auto* a = n->add_attribute();
      a->set_name("equation");
      a->set_type(onnx::AttributeProto::STRING);
      static const char* const kEquations[] = {"ij->ji",    "i...->...",   "...,...->",
                                               "ab,bc->ac", "ii->i",       "->",
                                               "i,i",       "abc->cba...", ",->"};
      a->set_s(kEquations[below(std::size(kEquations))]);
      if (maybe()) n->add_input(in);
    } else if (op == "GridSample") {
      n->add_input(weight(below(5)));
    } else if (op == "Range") {
      n->set_input(0, ints({odd()}));
      n->add_input(ints({odd()}));
      n->add_input(ints({odd()}));
    } else if (op == "Compress") {
      n->add_input(ints(odd_list(2)));
      if (maybe()) int_attr(n, "axis", odd());
    } else if (op == "DFT") {
      if (maybe()) n->add_input(ints({odd()}));
      if (maybe()) int_attr(n, "axis", odd());
      if (maybe()) int_attr(n, "onesided", odd());
    } else if (op == "LayerNormalization") {
      n->add_input(weight(below(3)));
      if (maybe()) int_attr(n, "axis", odd());
    } else if (op == "ReverseSequence") {
      n->add_input(ints(odd_list(2)));
      if (maybe()) int_attr(n, "batch_axis", odd());
      if (maybe()) int_attr(n, "time_axis", odd());
    } else if (op == "RoiAlign") {
      n->add_input(weight(2));
      n->add_input(ints(odd_list(2)));
      if (maybe()) int_attr(n, "output_height", odd());
    } else if (op == "Col2Im") {
      n->add_input(ints(odd_list(2)));
      n->add_input(ints(odd_list(2)));
    } else if (op == "LRN") {
      int_attr(n, "size", odd());
    } else if (op == "TopK") {
      n->add_input(ints({odd()}));
      n->add_output(fresh());
      if (maybe()) int_attr(n, "axis", odd());
    }
  }

  std::mt19937_64 rng_;
  onnx::GraphProto* g_ = nullptr;
  int names_ = 0;
};

// How one import ended, seen from outside the process that ran it.
struct Outcome {
  bool signalled = false;
  int signal = 0;
  int status = 0;  // 0: imported, 1: a one-line error, 2: an error of several lines
};

Outcome import_in_child(const fs::path& path) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The test framework's crash handlers would report in the child: a crash must show as
    // the signal it is, to the parent.
    for (int s : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT}) std::signal(s, SIG_DFL);
    auto g = import_model(path.string());
    _exit(g ? 0 : g.error().message().find('\n') == std::string::npos ? 1 : 2);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  Outcome o;
  if (WIFSIGNALED(status)) {
    o.signalled = true;
    o.signal = WTERMSIG(status);
  } else {
    o.status = WEXITSTATUS(status);
  }
  return o;
}

TEST_CASE("generated odd models import or fail with one line, never crash") {
  std::string pattern = (fs::temp_directory_path() / "planner_generated_XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  const fs::path dir = pattern;
  // PLANNER_GENERATED_MODELS raises the count for a longer search (the 6,000).
  const char* env = std::getenv("PLANNER_GENERATED_MODELS");
  const int count = env ? std::atoi(env) : 600;
  Generator gen(20261125);
  int imported = 0, refused = 0, crashed = 0;
  for (int i = 0; i < count; ++i) {
    onnx::ModelProto m = gen.model();
    const fs::path path = dir / ("m" + std::to_string(i) + ".onnx");
    {
      std::ofstream out(path, std::ios::binary);
      REQUIRE(m.SerializeToOstream(&out));
    }
    Outcome o = import_in_child(path);
    if (o.signalled || o.status > 1) {
      ++crashed;
      std::ostringstream text;
      text << m.graph();
      const std::string how = o.signalled ? "killed by signal " + std::to_string(o.signal)
                                          : std::string("gave an error of several lines");
      FAIL_CHECK("model " << i << " " << how << ":\n" << text.str());
    } else {
      (o.status == 0 ? imported : refused)++;
    }
    fs::remove(path);
  }
  MESSAGE(count << " generated models: " << imported << " imported, " << refused
                << " refused with one line, " << crashed << " crashed");
  CHECK(imported > count / 20);  // the generator must also make valid models
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace planner::importers
