// Tests for tdl/library.cpp: the shipped operator library parses, covers the operators of the
// shared models and of the issue's list, and users' files override it.
#include "tdl/library.h"

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tdl/builtin_ops.h"
#include "tdl/parser.h"
#include "tests/test_util.h"

namespace planner::tdl {
namespace {

// The operators the issue asks the library to describe (beside those of the shared models).
const char* const kRequiredOps[] = {"MatMul",
                                    "Gemm",
                                    "Conv",
                                    "MaxPool",
                                    "AveragePool",
                                    "GlobalAveragePool",
                                    "BatchNormalization",
                                    "LayerNormalization",
                                    "Softmax",
                                    "LogSoftmax",
                                    "Gather",
                                    "LSTM",
                                    "GRU",
                                    "ReduceMean",
                                    "ReduceSum",
                                    "ReduceMax",
                                    "Transpose",
                                    "Reshape",
                                    "Flatten",
                                    "Squeeze",
                                    "Unsqueeze",
                                    "Concat",
                                    "Split",
                                    "Slice",
                                    "Pad",
                                    "Dropout",
                                    "Cast",
                                    "Where",
                                    "Identity",
                                    "Erf",
                                    "Pow",
                                    "Sqrt",
                                    "Div",
                                    "Sub",
                                    "Mul",
                                    "Add",
                                    "Relu",
                                    "Sigmoid",
                                    "Tanh",
                                    "Gelu",
                                    "Neg",
                                    "Exp",
                                    "Log",
                                    "Clip",
                                    "Abs",
                                    "Expand"};

Library builtin_or_fail() {
  auto library = Library::builtin();
  REQUIRE_MESSAGE(library.has_value(), (library ? "" : library.error().message()));
  return std::move(*library);
}

TEST_CASE("every shipped file parses on its own") {
  REQUIRE(builtin_sources().size() >= 8);
  for (const BuiltinSource& source : builtin_sources()) {
    CAPTURE(source.name);
    auto file = parse_file(source.text, source.name);
    CHECK_MESSAGE(file.has_value(), (file ? "" : file.error().message()));
    if (file) CHECK(!file->ops.empty());
  }
}

TEST_CASE("the shipped library loads fast and names its files") {
  auto start = std::chrono::steady_clock::now();
  Library library = builtin_or_fail();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("parsing the shipped library took " << ms << " ms for " << library.entries().size()
                                              << " operators");
  // Generous: start-up cost of every command (typically a few ms).
  CHECK(ms < 500 * testing::kTimeScale);
  const OpEntry* conv = library.find("Conv");
  REQUIRE(conv != nullptr);
  CHECK(conv->source_name == "tdl/ops/conv.tdl");
  CHECK(conv->line > 0);
  CHECK(conv->variants.size() == 6);  // 1-, 2- and 3-D, each grouped or not
  CHECK_FALSE(conv->from_user);
  CHECK(library.find("Conv", "ai.onnx") == conv);
  CHECK(library.find("Conv", "com.example") == nullptr);
  CHECK(library.find("NoSuchOp") == nullptr);
}

TEST_CASE("every operator the issue lists is described") {
  Library library = builtin_or_fail();
  for (const char* op : kRequiredOps) {
    CAPTURE(op);
    CHECK(library.find(op) != nullptr);
  }
  // Tofu's examples ship too, for `planner tdl show`.
  for (const char* op : {"Conv1d", "ShiftTwo", "BatchCholesky"}) CHECK(library.find(op) != nullptr);
}

TEST_CASE("every operator type of the shared models is described") {
  PLANNER_REQUIRE_SHARED_MODELS();
  std::ifstream in(testing::shared_models_dir() / "MANIFEST.md");
  REQUIRE(in.good());
  std::string line, types_line;
  bool next_is_types = false;
  while (std::getline(in, line)) {
    if (line.rfind("## Operator types across these models", 0) == 0)
      next_is_types = true;
    else if (next_is_types && !line.empty()) {
      types_line = line;
      break;
    }
  }
  REQUIRE_MESSAGE(!types_line.empty(), "MANIFEST.md has no 'Operator types across these models'");
  Library library = builtin_or_fail();
  std::regex entry(R"(([A-Za-z][A-Za-z0-9_.]*) (\d+))");
  int checked = 0;
  for (auto it = std::sregex_iterator(types_line.begin(), types_line.end(), entry);
       it != std::sregex_iterator(); ++it) {
    std::string op = (*it)[1];
    // Constant and Shape are folded away by the importer before planning.
    if (op == "Constant" || op == "Shape") continue;
    CAPTURE(op);
    CHECK(library.find(op) != nullptr);
    ++checked;
  }
  CHECK(checked >= 25);
}

TEST_CASE("a user file overrides the built-in description of the same type and domain") {
  Library library = builtin_or_fail();
  size_t before = library.entries().size();
  auto added = library.add_source(
      "# two variants: both replace the shipped Relu\n"
      "op Relu(X[N]) -> Y[i] = max2(X[i], 0)\n"
      "op Relu(X[...]) -> Y[...] = opaque(X[...])\n"
      "op com.example.Fused(A[M, K], B[K, N]) -> C[m, n] = sum(k: A[m, k] * B[k, n])\n",
      "user.tdl", /*from_user=*/true);
  REQUIRE_MESSAGE(added.has_value(), (added ? "" : added.error().message()));
  const OpEntry* relu = library.find("Relu");
  REQUIRE(relu != nullptr);
  CHECK(relu->from_user);
  CHECK(relu->source_name == "user.tdl");
  CHECK(relu->line == 2);
  CHECK(relu->variants.size() == 2);
  const OpEntry* fused = library.find("Fused", "com.example");
  REQUIRE(fused != nullptr);
  CHECK(fused->display_name() == "com.example.Fused");
  CHECK(library.find_by_name("com.example.Fused") == fused);
  CHECK(library.find("Fused") == nullptr);  // the domain is part of the key
  CHECK(library.entries().size() == before + 1);
}

TEST_CASE("entries are sorted by domain, then op type") {
  Library library = builtin_or_fail();
  REQUIRE(library.add_source("op zz.last.Zed(X[N]) -> Y[i] = X[i]\n", "u.tdl", true).has_value());
  auto entries = library.entries();
  for (size_t i = 1; i < entries.size(); ++i) {
    auto key = [](const OpEntry* e) { return std::make_pair(e->domain, e->op_type); };
    CHECK(key(entries[i - 1]) < key(entries[i]));
  }
  CHECK(entries.back()->display_name() == "zz.last.Zed");
}

TEST_CASE("a bad user file is a located error") {
  Library library = builtin_or_fail();
  auto added = library.add_source("op Broken(X[N]) -> Y[i] = X[i +\n", "bad.tdl", true);
  REQUIRE_FALSE(added.has_value());
  CHECK(added.error().message().rfind("bad.tdl:", 0) == 0);
  CHECK(added.error().message().find('^') != std::string::npos);
  // The library is unchanged by a failed file.
  CHECK(library.find("Broken") == nullptr);

  auto missing = library.add_user_file("/no/such/dir/ops.tdl");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message() == "/no/such/dir/ops.tdl: no such file");
}

TEST_CASE("truncated library files give located errors, never a crash") {
  // Every shipped file cut at many places: each prefix either parses or fails with a located
  // diagnostic (`name:line:col: error: ...`); the parser and checker must not abort.
  int errors = 0;
  for (const BuiltinSource& source : builtin_sources()) {
    std::string_view text = source.text;
    for (size_t cut = 0; cut < text.size(); cut += 173) {
      auto file = parse_file(text.substr(0, cut), "cut.tdl");
      if (file) continue;
      ++errors;
      CAPTURE(source.name);
      CAPTURE(cut);
      CHECK(file.error().message().rfind("cut.tdl:", 0) == 0);
    }
  }
  CHECK(errors > 0);
}

TEST_CASE("a built-in file may not redefine another built-in file's operator") {
  Library library;
  REQUIRE(library.add_source("op Foo(X[N]) -> Y[i] = X[i]\n", "tdl/ops/a.tdl", false).has_value());
  auto again = library.add_source("op Foo(X[N]) -> Y[i] = X[i]\n", "tdl/ops/b.tdl", false);
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().message().find("operator 'Foo' is already described at tdl/ops/a.tdl:1") !=
        std::string::npos);
}

}  // namespace
}  // namespace planner::tdl
