// Tests for the TDL lexer, parser and semantic checks (tdl/parser.h, tdl/check.h).
#include "tdl/parser.h"

#include <string>

#include "tests/test_util.h"

namespace planner::tdl {
namespace {

// The full diagnostic for `text`, or "" when it parses and checks cleanly.
std::string error_of(const std::string& text) {
  auto file = parse_file(text, "t.tdl");
  return file ? std::string() : file.error().message();
}

File parse_ok(const std::string& text) {
  auto file = parse_file(text, "t.tdl");
  INFO(text);
  REQUIRE_MESSAGE(file.has_value(), (file ? std::string() : file.error().message()));
  return std::move(*file);
}

TEST_CASE("parses the reference examples") {
  File file = parse_ok(R"(
# Tofu's conv1d
op Conv1d(data[B, CI, X], filters[CI, CO, DX]) -> out[b, co, x] =
    sum(ci, dx: data[b, ci, x + dx] * filters[ci, co, dx])
op ShiftTwo(A[N]) -> B[i] = A[i + 2]
op BatchCholesky(m[B, R, C]) -> out[b, i, j] = opaque(m[b, :, :])
)");
  REQUIRE(file.ops.size() == 3);
  const OpDef& conv = file.ops[0];
  CHECK(conv.name == "Conv1d");
  CHECK(conv.loc == SourceLoc{3, 1});
  REQUIRE(conv.inputs.size() == 2);
  CHECK(conv.inputs[0].name == "data");
  REQUIRE(conv.inputs[0].dims.size() == 3);
  CHECK(conv.inputs[0].dims[1].kind == DimDecl::Kind::kSize);
  CHECK(conv.inputs[0].dims[1].name == "CI");
  REQUIRE(conv.outputs.size() == 1);
  CHECK(conv.outputs[0].dims[2].name == "x");
  CHECK(to_string(conv.bodies[0]) == "sum(ci, dx: data[b, ci, x + dx] * filters[ci, co, dx])");
  CHECK(to_string(file.ops[1].bodies[0]) == "A[i + 2]");
  CHECK(to_string(file.ops[2].bodies[0]) == "opaque(m[b, :, :])");
}

TEST_CASE("parses attributes, guards, optional inputs, groups, placement and views") {
  File file = parse_ok(R"(
op Gemm<transA = 0, transB = 0, alpha = 1.0, beta = 1.0> when transA == 0 and transB == 1
    (A[M, K], B[N, K], C[..c]?) -> Y[m, n] = alpha * sum(k: A[m, k] * B[n, k]) + beta * C[m, n]
op Softmax<axis = -1>(X[..a, N @ axis, ..b]) -> Y[..a, n, ..b] =
    exp(X[..a, n, ..b]) / sum(k: exp(X[..a, k, ..b]))
op com.microsoft.Gate<mode = "x", pads = [0, 0], scales = [1, 2.5]>(W[D, 4 * H, I] as [D, 4, H, I], v[...])
    -> (Y[d, g, h], Z[...]) = (sum(i: W[d, g, h, i]), v[...])
op Pool<kernel = [2]>(X[N, L]) -> Y[n, l : L / 2] = max(k < kernel[0]: X[n, l * 2 + k])
op Concat<axis>(inputs*[...]) -> out[...] = concat(inputs, axis)
)");
  REQUIRE(file.ops.size() == 5);
  const OpDef& gemm = file.ops[0];
  REQUIRE(gemm.attrs.size() == 4);
  CHECK(std::get<int64_t>(*gemm.attrs[0].default_value) == 0);
  CHECK(std::get<double>(*gemm.attrs[2].default_value) == 1.0);
  REQUIRE(gemm.guard);
  CHECK(to_string(gemm.guard) == "transA == 0 and transB == 1");
  CHECK(gemm.inputs[2].optional);
  CHECK(gemm.inputs[2].dims[0].kind == DimDecl::Kind::kGroup);
  CHECK(gemm.inputs[2].dims[0].name == "c");
  const OpDef& softmax = file.ops[1];
  CHECK(std::get<int64_t>(*softmax.attrs[0].default_value) == -1);
  CHECK(softmax.inputs[0].dims[1].axis_attr == "axis");
  CHECK(softmax.outputs[0].dims[0].is_group);
  const OpDef& gate = file.ops[2];
  CHECK(gate.domain == "com.microsoft");
  CHECK(gate.op_type == "Gate");
  CHECK(attr_to_string(*gate.attrs[0].default_value) == "\"x\"");
  CHECK(attr_to_string(*gate.attrs[1].default_value) == "[0, 0]");
  CHECK(attr_to_string(*gate.attrs[2].default_value) == "[1.0, 2.5]");
  CHECK(gate.inputs[0].has_view);
  CHECK(gate.inputs[0].dims[1].kind == DimDecl::Kind::kExpr);
  CHECK(gate.inputs[0].view.size() == 4);
  CHECK(gate.outputs.size() == 2);
  CHECK(gate.bodies.size() == 2);
  const OpDef& pool = file.ops[3];
  CHECK(to_string(pool.outputs[0].dims[1].extent) == "L / 2");
  CHECK(to_string(pool.bodies[0]) == "max(k < kernel[0]: X[n, l * 2 + k])");
  CHECK(file.ops[4].inputs[0].variadic);
  CHECK(file.ops[4].attrs[0].default_value == std::nullopt);
}

TEST_CASE("prints expressions with minimal parentheses") {
  File file = parse_ok("op F(A[N], B[N]) -> C[i] = (A[i] - B[i]) * (A[i] - (B[i] - 1)) / -A[i]\n");
  CHECK(to_string(file.ops[0].bodies[0]) == "(A[i] - B[i]) * (A[i] - (B[i] - 1)) / -A[i]");
}

TEST_CASE("syntax errors are located with a caret") {
  CHECK(error_of("op F(A[N]) -> B[i] = A[i +]\n") ==
        "t.tdl:1:27: error: expected an expression, got ']'\n"
        "op F(A[N]) -> B[i] = A[i +]\n"
        "                          ^");
  CHECK(error_of("op F(A[N]) B[i] = A[i]\n") ==
        "t.tdl:1:12: error: expected '->' before the outputs, got identifier 'B'\n"
        "op F(A[N]) B[i] = A[i]\n"
        "           ^");
  CHECK(error_of("\n\top F(A[N]) -> B[i] = A[i] $\n") ==
        "t.tdl:2:28: error: unexpected character '$'\n"
        "\top F(A[N]) -> B[i] = A[i] $\n"
        "\t                          ^");
  CHECK(error_of("op F(A[N]) -> B[i] = A[i]\nfoo") ==
        "t.tdl:2:1: error: expected 'op', got identifier 'foo'\n"
        "foo\n"
        "^");
  CHECK(error_of("op F(A[N]) -> (B[i], C[i]) = A[i]\n")
            .find("t.tdl:1:30: error: expected '(' before the 2 bodies") == 0);
}

TEST_CASE("semantic errors are located with a caret") {
  CHECK(error_of("op F(A[N]) -> B[i] = C[i]\n") ==
        "t.tdl:1:22: error: operator 'F': unknown tensor 'C'\n"
        "op F(A[N]) -> B[i] = C[i]\n"
        "                     ^");
  CHECK(error_of("op F(A[N]) -> B[i] = A[j]\n") ==
        "t.tdl:1:24: error: operator 'F': unbound index variable 'j'\n"
        "op F(A[N]) -> B[i] = A[j]\n"
        "                       ^");
  CHECK(error_of("op F(A[N, M]) -> B[i, j] = A[i * j, 0]\n") ==
        "t.tdl:1:30: error: operator 'F': non-affine index 'i * j': a product of index variables\n"
        "op F(A[N, M]) -> B[i, j] = A[i * j, 0]\n"
        "                             ^");
  CHECK(error_of("op F(A[N]) -> B[i] = A[exp(i)]\n") ==
        "t.tdl:1:24: error: operator 'F': non-affine index 'exp(i)': function 'exp' of an index "
        "variable\n"
        "op F(A[N]) -> B[i] = A[exp(i)]\n"
        "                       ^");
  CHECK(error_of("op F(A[N], I[N]) -> B[i] = A[I[i]]\n")
            .find("non-affine index 'I[i]': an index cannot read a tensor") != std::string::npos);
  CHECK(error_of("op F(A[N, M]) -> B[i] = A[i]\n") ==
        "t.tdl:1:25: error: operator 'F': 'A' has 2 dimensions but is indexed with 1 index\n"
        "op F(A[N, M]) -> B[i] = A[i]\n"
        "                        ^");
  CHECK(error_of("op F(A[N, M]) -> B[i] = sum(i: A[i, i])\n") ==
        "t.tdl:1:29: error: operator 'F': index variable 'i' is bound twice\n"
        "op F(A[N, M]) -> B[i] = sum(i: A[i, i])\n"
        "                            ^");
  CHECK(error_of("op F(A[N, M]) -> B[i] = sum(k, j: A[i, k])\n") ==
        "t.tdl:1:32: error: operator 'F': reduction variable 'j' is not used\n"
        "op F(A[N, M]) -> B[i] = sum(k, j: A[i, k])\n"
        "                               ^");
  CHECK(error_of("op F(A[N]) -> B[i, i] = A[i]\n").find("index variable 'i' is bound twice") !=
        std::string::npos);
  CHECK(error_of("op F(A[N]) -> B[i] = frob(A[i])\n").find("unknown function 'frob'") !=
        std::string::npos);
  CHECK(error_of("op F(A[N]) -> B[i : Q] = A[i]\n").find("unknown size 'Q'") != std::string::npos);
  CHECK(error_of("op F<a = 1> when b == 1 (A[N]) -> B[i] = A[i]\n")
            .find("unknown attribute 'b' in guard") != std::string::npos);
  CHECK(error_of("op F(A[N]) -> B[i] = A[..q]\n").find("unknown group '..q'") != std::string::npos);
  CHECK(error_of("op F(A[n]) -> B[i] = A[i]\n").find("must be a size") != std::string::npos);
  CHECK(error_of("op F(A[..., N]) -> B[..., i] = A[i, ...]\n") ==
        "t.tdl:1:34: error: operator 'F': index 1 of 'A' is not a group but the declaration has a "
        "group there\n"
        "op F(A[..., N]) -> B[..., i] = A[i, ...]\n"
        "                                 ^");
  CHECK(error_of("op F(X*[N]) -> B[i] = X[i]\n")
            .find("variadic input 'X' can only be read through concat(X, axis)") !=
        std::string::npos);
}

TEST_CASE("hostile input gives errors, not crashes") {
  std::string deep =
      "op F(A[N]) -> B[i] = " + std::string(5000, '(') + "A[i]" + std::string(5000, ')') + "\n";
  CHECK(error_of(deep).find("t.tdl:1:222: error: expression is nested too deeply") == 0);
  CHECK(error_of("op F(A[N]) -> B[i] = A[i + 99999999999999999999]\n")
            .find("integer '99999999999999999999' is too large") != std::string::npos);
  CHECK(error_of("op F(A[N]) -> B[i] = A[i")
            .find("expected ']' after the indices of 'A', got end of input") != std::string::npos);
  CHECK(error_of("op").find("t.tdl:1:3: error: expected an operator name, got end of input") == 0);
  CHECK(error_of("op F<a = \"x>(A[N]) -> B[i] = A[i]\n").find("unterminated string") !=
        std::string::npos);
  CHECK(error_of("").empty());
}

// A term repeated `n` times, joined by `sep`.
std::string repeated(const std::string& term, const std::string& sep, int n) {
  std::string out;
  out.reserve(static_cast<size_t>(n) * (term.size() + sep.size()));
  for (int i = 0; i < n; ++i) out += (i ? sep : "") + term;
  return out;
}

TEST_CASE("deep nesting is a located error, not a stack overflow") {
  // 40k nested '[' in an attribute default.
  std::string lists = "op F<a = " + std::string(40000, '[') + "1" + std::string(40000, ']') +
                      ">(A[N]) -> B[i] = A[i]\n";
  std::string e = error_of(lists);
  CHECK(e.find("t.tdl:1:210: error: list is nested too deeply (more than 200 levels)") == 0);
  // The 80k-character line is shown as a window around the caret, not whole.
  CHECK(e.size() < 400);
  CHECK(e.find("\n...[[[[") != std::string::npos);
  CHECK(e.substr(e.rfind('\n') + 1) == std::string(63, ' ') + "^");

  // A 40k-term chain parses in a loop but would build a 40k-deep tree.
  std::string chain = "op F(A[N]) -> B[i] = " + repeated("A[i]", " + ", 40000) + "\n";
  e = error_of(chain);
  CHECK(e.find("t.tdl:1:") == 0);
  CHECK(e.find("error: expression is nested too deeply (more than 256 levels)") !=
        std::string::npos);
  CHECK(e.size() < 400);
  CHECK(error_of("op F(A[N]) -> B[i] = " + repeated("A[i]", " * ", 40000) + "\n")
            .find("expression is nested too deeply") != std::string::npos);
  CHECK(error_of("op F<t = 1> when " + repeated("t == 1", " and ", 40000) +
                 " (A[N]) -> B[i] = A[i]\n")
            .find("expression is nested too deeply") != std::string::npos);
  CHECK(error_of("op F<t = 1> when " + repeated("not", " ", 40000) +
                 " t == 1 (A[N]) -> B[i] = A[i]\n")
            .find("expression is nested too deeply (more than 200 levels)") != std::string::npos);
  CHECK(error_of("op F(A[N]) -> B[i] = A[i + " + repeated("-", " ", 40000) + "1]\n")
            .find("expression is nested too deeply") != std::string::npos);
  CHECK(error_of("op F(A[N]) -> B[i] = A[" + repeated("N", " + ", 40000) + "]\n")
            .find("expression is nested too deeply") != std::string::npos);

  // Within the bound everything still parses and prints.
  File ok = parse_ok("op F(A[N]) -> B[i] = " + repeated("A[i]", " + ", 200) + "\n");
  CHECK(ok.ops[0].bodies[0]->height == 201);
  CHECK(to_string(ok.ops[0].bodies[0]) == repeated("A[i]", " + ", 200));
}

TEST_CASE("a TDL text larger than the bound fails at once") {
  std::string big(kMaxSourceBytes + 1, ' ');
  std::string e = error_of(big);
  CHECK(e == "t.tdl: error: file is 1048577 bytes; TDL files are limited to 1048576 bytes (1 MiB)");
  // A line of 50 MB: refused before any tokenising.
  std::string huge(50u << 20, 'x');
  CHECK(error_of(huge).find("t.tdl: error: file is 52428800 bytes") == 0);
}

}  // namespace
}  // namespace planner::tdl
