// Row-flattened Gemms (Reshape -> Gemm -> Reshape) rewritten into MatMul on the leading
// dimensions: see unflatten_linear.h.
#include "importers/unflatten_linear.h"

#include <cstring>
#include <numeric>
#include <optional>

#include <fmt/format.h>

namespace planner::importers {

namespace {

int64_t product(const std::vector<int64_t>& s, size_t from) {
  return std::accumulate(s.begin() + static_cast<std::ptrdiff_t>(from), s.end(), int64_t{1},
                         std::multiplies<>());
}

bool is_output(const ir::Graph& g, ir::TensorId t) {
  for (ir::TensorId o : g.outputs)
    if (o == t) return true;
  return false;
}

// The single consumer of `t`, read once, or kNoOp.
ir::OpId sole_consumer(const ir::Graph& g, ir::TensorId t) {
  const auto& c = g.tensor(t).consumers;
  return c.size() == 1 && !is_output(g, t) ? c[0] : ir::kNoOp;
}

bool plain(const ir::Op& op, const char* type) {
  return op.op_type == type && (op.domain.empty() || op.domain == "ai.onnx");
}

std::string fresh_name(const ir::Graph& g, const std::string& base) {
  std::string name = base;
  for (int n = 1; g.find_tensor(name) || g.find_op(name); ++n) name = fmt::format("{}.{}", base, n);
  return name;
}

struct Match {
  ir::OpId flatten = ir::kNoOp, gemm = ir::kNoOp, unflatten = ir::kNoOp;
  int64_t d0 = 0, d1 = 0;
};

// Whether Gemm `id` sits between a Reshape that flattens leading dimensions into rows and
// one that splits them back, in a form the rewrite keeps exact.
std::optional<Match> match(const ir::Graph& g, ir::OpId id) {
  const ir::Op& gemm = g.op(id);
  if (!plain(gemm, "Gemm") || gemm.inputs.size() < 2 || gemm.int_attr("transA", 0) != 0 ||
      gemm.float_attr("alpha", 1.0) != 1.0 || gemm.float_attr("beta", 1.0) != 1.0)
    return std::nullopt;
  const ir::Tensor& a = g.tensor(gemm.inputs[0]);
  if (a.producer == ir::kNoOp || !plain(g.op(a.producer), "Reshape") ||
      sole_consumer(g, gemm.inputs[0]) != id)
    return std::nullopt;
  if (gemm.inputs.size() > 2 && gemm.inputs[2] != ir::kNoTensor &&
      g.tensor(gemm.inputs[2]).rank() > 1)
    return std::nullopt;  // a per-row C does not broadcast over [d0, d1, N]
  const ir::OpId back = sole_consumer(g, gemm.outputs[0]);
  if (back == ir::kNoOp || !plain(g.op(back), "Reshape")) return std::nullopt;
  const auto& x = g.tensor(g.op(a.producer).inputs[0]).shape;
  const auto& y = g.tensor(g.op(back).outputs[0]).shape;
  const auto& rows = a.shape;
  if (rows.size() != 2 || y.size() != 3 || x.size() < 2) return std::nullopt;
  const int64_t d0 = y[0], d1 = y[1], k = rows[1];
  if (x[0] != d0 || d0 * d1 != rows[0] || product(x, 1) != d1 * k) return std::nullopt;
  return Match{a.producer, id, back, d0, d1};
}

ir::TensorId shape_constant(ir::Graph& g, const std::string& base, const std::vector<int64_t>& v) {
  ir::Tensor t;
  t.name = fresh_name(g, base);
  t.dtype = ir::DType::kInt64;
  t.shape = {static_cast<int64_t>(v.size())};
  t.role = ir::TensorRole::kConstant;
  t.data.resize(v.size() * sizeof(int64_t));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return g.add_tensor(std::move(t));
}

void rewrite(ir::Graph& g, const Match& m) {
  const ir::Op gemm = g.op(m.gemm);  // copies: adding tensors and ops moves storage
  const ir::TensorId rows = gemm.inputs[0], out = gemm.outputs[0];
  const int64_t k = g.tensor(rows).shape[1], n = g.tensor(out).shape[1];

  ir::Op& flatten = g.op(m.flatten);
  const std::string flatten_name = flatten.name;
  ir::TensorId shape = shape_constant(g, flatten_name + "/leading_shape", {m.d0, m.d1, k});
  g.op(m.flatten).inputs = {g.op(m.flatten).inputs[0], shape};
  g.tensor(rows).shape = {m.d0, m.d1, k};

  // With transB the weight is [N, K]: planner's MatMulTransB reads it as it is (one GEMM
  // with cuBLAS's transpose flag, as the Gemm was), else a plain MatMul.
  const bool trans_b = gemm.int_attr("transB", 0) != 0;
  ir::Op& mm = g.op(m.gemm);
  mm.op_type = trans_b ? "MatMulTransB" : "MatMul";
  mm.domain = trans_b ? "ai.planner" : "";
  mm.attributes.clear();
  mm.inputs = {rows, gemm.inputs[1]};
  g.tensor(out).shape = {m.d0, m.d1, n};

  ir::Op& back = g.op(m.unflatten);
  const bool bias = gemm.inputs.size() > 2 && gemm.inputs[2] != ir::kNoTensor;
  back.op_type = bias ? "Add" : "Identity";
  back.attributes.clear();
  back.inputs =
      bias ? std::vector<ir::TensorId>{out, gemm.inputs[2]} : std::vector<ir::TensorId>{out};
}

}  // namespace

Expected<void> unflatten_linear(ir::Graph& graph, const std::string& source) {
  std::vector<Match> found;
  for (ir::OpId id = 0; id < graph.num_ops(); ++id)
    if (auto m = match(graph, id)) found.push_back(*m);
  if (found.empty()) return ok();
  for (const Match& m : found) rewrite(graph, m);
  graph.erase_unused_tensors();  // the flattening reshapes' old shape constants
  return graph.finalize(source);
}

}  // namespace planner::importers
