// Tests for instantiation of TDL descriptions (tdl/instantiate.h).
#include "tdl/instantiate.h"

#include <string>

#include "tdl/parser.h"
#include "tests/test_util.h"

namespace planner::tdl {
namespace {

File parse_ok(const std::string& text) {
  auto file = parse_file(text, "t.tdl");
  REQUIRE_MESSAGE(file.has_value(), (file ? std::string() : file.error().message()));
  return std::move(*file);
}

// Instantiates every definition of `file` named `op_type` for `request`.
Expected<Instance> inst(const File& file, InstanceRequest request) {
  std::vector<const OpDef*> variants;
  for (const auto& op : file.ops)
    if (op.op_type == request.op_type) variants.push_back(&op);
  if (request.node_name.empty()) request.node_name = "n";
  return instantiate(variants, request, file.source.get());
}

std::string text_of(const File& file, const InstanceRequest& request) {
  auto i = inst(file, request);
  return i ? to_string(*i) : "error: " + i.error().message();
}

InstanceInput in(std::vector<int64_t> shape) {
  return {true, std::move(shape), std::nullopt};
}
InstanceOutput out(std::vector<int64_t> shape) {
  return {true, std::move(shape)};
}

// A request for node "n" of type `op_type`.
InstanceRequest req(std::string op_type, std::vector<InstanceInput> inputs,
                    std::vector<InstanceOutput> outputs,
                    std::map<std::string, AttrValue> attributes = {}, std::string node_name = "n") {
  InstanceRequest r;
  r.op_type = std::move(op_type);
  r.node_name = std::move(node_name);
  r.attributes = std::move(attributes);
  r.inputs = std::move(inputs);
  r.outputs = std::move(outputs);
  return r;
}

TEST_CASE("standalone instantiation keeps sizes symbolic or binds given ones") {
  File file = parse_ok("op ShiftTwo(A[N]) -> B[i] = A[i + 2]\n");
  auto a = instantiate_standalone(file.ops[0]);
  REQUIRE(a);
  CHECK(to_string(*a) == "op ShiftTwo(A[N]) -> B[i] = A[i + 2]");
  CHECK_FALSE(a->concrete());
  auto b = instantiate_standalone(file.ops[0], {{"N", 12}});
  REQUIRE(b);
  CHECK(to_string(*b) == "op ShiftTwo(A[N]) -> B[i] = A[i + 2]   # N = 12");
  CHECK(b->concrete());
}

TEST_CASE("numpy broadcasting: right-aligned, size-1 dimensions read at 0") {
  File file = parse_ok("op Add(A[...], B[...]) -> C[...] = A[...] + B[...]\n");
  CHECK(text_of(file, req("Add", {in({8, 1, 5}), in({4, 1})}, {out({8, 4, 5})})) ==
        "op Add(A[A.0, A.1, A.2], B[B.0, B.1]) -> C[e0, e1, e2] = A[e0, 0, e2] + B[e1, 0]"
        "   # A.0 = 8, A.1 = 1, A.2 = 5, B.0 = 4, B.1 = 1");
}

TEST_CASE("batched MatMul with broadcast batch dimensions") {
  File file = parse_ok(
      "op MatMul(A[..., M, K], B[..., K, N]) -> C[..., m, n] = sum(k: A[..., m, k] * B[..., k, "
      "n])\n");
  CHECK(
      text_of(file, req("MatMul", {in({2, 3, 4, 5}), in({5, 6})}, {out({2, 3, 4, 6})})) ==
      "op MatMul(A[A.0, A.1, M, K], B[K, N]) -> C[e0, e1, m, n] = sum(k: A[e0, e1, m, k] * B[k, n])"
      "   # A.0 = 2, A.1 = 3, M = 4, K = 5, N = 6");
  CHECK(text_of(file, req("MatMul", {in({4, 5}), in({6, 7})}, {out({4, 7})})) ==
        "error: node 'n' (MatMul): size 'K' is 6 in input 'B' but 5 elsewhere");
}

TEST_CASE("axis placement, negative axes and attribute defaults") {
  File file = parse_ok(R"(
op Softmax<axis = -1>(X[..a, N @ axis, ..b]) -> Y[..a, n, ..b] =
    exp(X[..a, n, ..b]) / sum(k: exp(X[..a, k, ..b]))
)");
  CHECK(text_of(file, req("Softmax", {in({2, 3, 4})}, {out({2, 3, 4})})) ==
        "op Softmax(X[X.0, X.1, N]) -> Y[a0, a1, n] = exp(X[a0, a1, n]) / sum(k: exp(X[a0, a1, k]))"
        "   # X.0 = 2, X.1 = 3, N = 4");
  CHECK(text_of(file, req("Softmax", {in({2, 3, 4})}, {out({2, 3, 4})}, {{"axis", int64_t{1}}})) ==
        "op Softmax(X[X.0, N, X.2]) -> Y[a0, n, b0] = exp(X[a0, n, b0]) / sum(k: exp(X[a0, k, b0]))"
        "   # X.0 = 2, N = 3, X.2 = 4");
}

TEST_CASE("variants by guard, optional inputs and required attributes") {
  File file = parse_ok(R"(
op Gemm<transA = 0, transB = 0, alpha = 1.0> when transA == 0 and transB == 0
    (A[M, K], B[K, N], C[..c]?) -> Y[m, n] = alpha * sum(k: A[m, k] * B[k, n]) + C[m, n]
op Gemm<transA = 0, transB = 0, alpha = 1.0> when transA == 0 and transB == 1
    (A[M, K], B[N, K], C[..c]?) -> Y[m, n] = alpha * sum(k: A[m, k] * B[n, k]) + C[m, n]
op Gather<axis>(X[N]) -> Y[i] = X[i]
)");
  CHECK(text_of(file, req("Gemm", {in({4, 5}), in({6, 5}), in({6})}, {out({4, 6})},
                          {{"transB", int64_t{1}}})) ==
        "op Gemm(A[M, K], B[N, K], C[C.0]) -> Y[m, n] = 1.0 * sum(k: A[m, k] * B[n, k]) + C[n]"
        "   # M = 4, K = 5, N = 6, C.0 = 6");
  CHECK(text_of(file, req("Gemm", {in({4, 5}), in({5, 6})}, {out({4, 6})})) ==
        "op Gemm(A[M, K], B[K, N]) -> Y[m, n] = 1.0 * sum(k: A[m, k] * B[k, n])   # M = 4, K = 5, "
        "N = 6");
  CHECK(text_of(file,
                req("Gemm", {in({4, 5}), in({5, 6}), {false, {}, std::nullopt}}, {out({4, 6})})) ==
        "op Gemm(A[M, K], B[K, N]) -> Y[m, n] = 1.0 * sum(k: A[m, k] * B[k, n])   # M = 4, K = 5, "
        "N = 6");
  CHECK(text_of(file,
                req("Gemm", {in({4, 5}), in({5, 6})}, {out({4, 6})}, {{"transA", int64_t{1}}})) ==
        "error: node 'n' (Gemm): no variant of the description matches (line 2: guard 'transA == 0 "
        "and transB == 0' "
        "is false; line 4: guard 'transA == 0 and transB == 1' is false)");
  CHECK(text_of(file, req("Gather", {in({4})}, {out({4})}, {}, "g1")) ==
        "error: node 'g1' (Gather): attribute 'axis' is required by the description but not set");
}

TEST_CASE("reshape splits and merges dimension groups") {
  File file = parse_ok("op Reshape(data[...], shape[K]) -> reshaped[..o] = reshape(data)\n");
  CHECK(text_of(file, req("Reshape", {in({2, 5, 768}), in({4})}, {out({2, 5, 12, 64})})) ==
        "op Reshape(data[data.0, data.1, data.2], shape[K]) -> reshaped[o0, o1, o2, o3] = data[o0, "
        "o1, o2 * 64 + o3]"
        "   # data.0 = 2, data.1 = 5, data.2 = 768, K = 4");
  CHECK(
      text_of(file, req("Reshape", {in({2, 5, 12, 64}), in({3})}, {out({2, 5, 768})})) ==
      "op Reshape(data[data.0, data.1, data.2, data.3], shape[K]) -> reshaped[o0, o1, o2] = "
      "data[o0, o1, o2 / 64, o2 % 64]   # data.0 = 2, data.1 = 5, data.2 = 12, data.3 = 64, K = 3");
  CHECK(text_of(file, req("Reshape", {in({6, 4}), in({2})}, {out({4, 6})})) ==
        "op Reshape(data[data.0, data.1], shape[K]) -> reshaped[o0, o1] = data[(o0 * 6 + o1) / 4, "
        "(o0 * 6 + o1) % 4]"
        "   # data.0 = 6, data.1 = 4, K = 2");
}

TEST_CASE("concat, split, slice, pad and transpose expand to offset accesses") {
  File file = parse_ok(R"(
op Concat<axis>(inputs*[...]) -> concat_result[...] = concat(inputs, axis)
op Split<axis = 0>(input[...]) -> outputs*[...] = split(input, axis)
op Slice(data[...], starts[S], ends[S], axes[S]?, steps[S]?) -> output[...] = slice(data)
op Pad(data[...], pads[P]) -> output[...] = pad(data)
op Transpose<perm = []>(data[...]) -> transposed[..o] = transpose(data)
)");
  CHECK(text_of(file,
                req("Concat", {in({2, 3}), in({2, 5})}, {out({2, 8})}, {{"axis", int64_t{-1}}})) ==
        "op Concat(inputs_0[inputs_0.0, inputs_0.1], inputs_1[inputs_1.0, inputs_1.1]) -> "
        "concat_result[e0, e1] = "
        "concat(inputs_0[e0, e1], inputs_1[e0, e1 - 3])   # inputs_0.0 = 2, inputs_0.1 = 3, "
        "inputs_1.0 = 2, inputs_1.1 = 5");
  CHECK(text_of(file,
                req("Split", {in({2, 8})}, {out({2, 3}), out({2, 5})}, {{"axis", int64_t{1}}})) ==
        "op Split(input[input.0, input.1]) -> (outputs_0[e0, e1], outputs_1[e0, e1]) = (input[e0, "
        "e1], input[e0, e1 + 3])"
        "   # input.0 = 2, input.1 = 8");
  InstanceInput starts{true, {1}, std::vector<int64_t>{2}},
      ends{true, {1}, std::vector<int64_t>{10}}, axes{true, {1}, std::vector<int64_t>{-1}},
      steps{true, {1}, std::vector<int64_t>{2}};
  CHECK(text_of(file, req("Slice", {in({3, 12}), starts, ends, axes, steps}, {out({3, 4})})) ==
        "op Slice(data[data.0, data.1], starts[S], ends[S], axes[S], steps[S]) -> output[e0, e1] = "
        "data[e0, e1 * 2 + 2]"
        "   # data.0 = 3, data.1 = 12, S = 1");
  InstanceInput pads{true, {4}, std::vector<int64_t>{0, 1, 0, 2}};
  CHECK(text_of(file, req("Pad", {in({3, 4}), pads}, {out({3, 7})})) ==
        "op Pad(data[data.0, data.1], pads[P]) -> output[e0, e1] = data[e0, e1 - 1]   # data.0 = "
        "3, data.1 = 4, P = 4");
  CHECK(text_of(file, req("Transpose", {in({2, 3, 4})}, {out({2, 4, 3})},
                          {{"perm", std::vector<int64_t>{0, 2, 1}}})) ==
        "op Transpose(data[data.0, data.1, data.2]) -> transposed[o0, o1, o2] = data[o0, o2, o1]"
        "   # data.0 = 2, data.1 = 3, data.2 = 4");
}

TEST_CASE("views and packed dimensions bind their sizes") {
  File file =
      parse_ok("op Gates(W[D, 4 * H, I] as [D, 4, H, I]) -> Y[d, g, h] = sum(i: W[d, g, h, i])\n");
  CHECK(text_of(file, req("Gates", {in({1, 32, 5})}, {out({1, 4, 8})})) ==
        "op Gates(W[D, 4 * H, I] as [D, 4, H, I]) -> Y[d, g, h] = sum(i: W[d, g, h, i])   # D = 1, "
        "H = 8, I = 5");
}

TEST_CASE("sibling reductions over the same name get unique variables") {
  File file = parse_ok("op F(X[N]) -> Y[i] = sum(k: X[k]) + max(k: X[k]) + X[i]\n");
  CHECK(text_of(file, req("F", {in({5})}, {out({5})})) ==
        "op F(X[N]) -> Y[i] = sum(k: X[k]) + max(k_2: X[k_2]) + X[i]   # N = 5");
}

TEST_CASE("an opaque function reads less when an optional input is absent") {
  File file = parse_ok(
      "op Cell(X[N, H], init[N, H]?, P[H]?) -> Y[n, h] = opaque(X[n, :], init[n, h], P[h]) + "
      "exp(P[h])\n");
  CHECK(text_of(file, req("Cell", {in({4, 8})}, {out({4, 8})})) ==
        "op Cell(X[N, H]) -> Y[n, h] = opaque(X[n, :])   # N = 4, H = 8");
  CHECK(
      text_of(file, req("Cell", {in({4, 8}), {false, {}, std::nullopt}, in({8})}, {out({4, 8})})) ==
      "op Cell(X[N, H], P[H]) -> Y[n, h] = opaque(X[n, :], P[h]) + exp(P[h])   # N = 4, H = 8");
}

TEST_CASE("instantiation errors name the node and never crash") {
  File file = parse_ok(R"(
op Soft<axis = -1>(X[..a, N @ axis, ..b]) -> Y[..a, n, ..b] = X[..a, n, ..b]
op Two(A[M, K], B[K]) -> C[m] = sum(k: A[m, k] * B[k])
op Cat<axis>(inputs*[...]) -> out[...] = concat(inputs, axis)
)");
  CHECK(text_of(file, req("Soft", {in({2, 3})}, {out({2, 3})}, {{"axis", int64_t{2}}})) ==
        "error: node 'n' (Soft): attribute 'axis' = 2 is out of range for rank 2");
  CHECK(text_of(file, req("Two", {in({2, 3})}, {out({2})})) ==
        "error: node 'n' (Two): no variant of the description matches (line 3: input 'B' is "
        "missing)");
  CHECK(text_of(file, req("Two", {in({2, 3}), in({3, 1})}, {out({2})})) ==
        "error: node 'n' (Two): no variant of the description matches (line 3: input 'B' has rank "
        "2, the description wants 1)");
  CHECK(text_of(file, req("Cat", {in({2, 3}), in({2})}, {out({2, 4})}, {{"axis", int64_t{0}}})) ==
        "error: node 'n' (Cat): 'concat': input 'inputs_1' has rank 1 but the output has rank 2");
  auto none = instantiate({}, req("Missing", {}, {}));
  REQUIRE_FALSE(none);
  CHECK(none.error().message() == "node 'n' (Missing): no description");
}

TEST_CASE("the deepest expression the parser accepts instantiates and prints") {
  std::string chain;
  for (int i = 0; i < 255; ++i) chain += (i ? " + " : "") + std::string("A[i]");
  File file = parse_ok("op Deep(A[N]) -> B[i] = " + chain + "\n");
  auto a = inst(file, req("Deep", {in({8})}, {out({8})}));
  REQUIRE_MESSAGE(a.has_value(), (a ? std::string() : a.error().message()));
  CHECK(to_string(*a).find(chain) != std::string::npos);
}

}  // namespace
}  // namespace planner::tdl
