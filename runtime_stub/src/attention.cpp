// ai.planner.Attention (fused attention: softmax(scale · Q Kᵀ + Mask) V and the log-sum-exp of
// each query row's scores) and AttentionGrad on the cpu: the checks the cuda kernels share
// (attention.h), then attention_math.h's row bodies over every row in order. Each row is
// independent of the others, so a shard of the query rows (query_offset) computes exactly the
// rows of the whole.
#include "attention.h"

#include <algorithm>
#include <string>
#include <vector>

namespace planner::rt::kernels {

namespace {

Shape with_tail(const Shape& lead, std::initializer_list<int64_t> tail) {
  Shape s = lead;
  s.insert(s.end(), tail);
  return s;
}

// Q, K, V at inputs qi, qi + 1, qi + 2 and the optional Mask at input mi: types, ranks, the
// leading dimensions, D and T, and the attributes; fills c and *lead (the leading dimensions).
void check_inputs(const KernelContext& ctx, size_t qi, size_t mi, AttentionCall* c, Shape* lead) {
  const Tensor& q = ctx.in(qi);
  const Tensor& k = ctx.in(qi + 1);
  const Tensor& v = ctx.in(qi + 2);
  ctx.expect_dtype(q, DType::kFloat32, "Q");
  ctx.expect_dtype(k, DType::kFloat32, "K");
  ctx.expect_dtype(v, DType::kFloat32, "V");
  if (q.rank() < 2) ctx.fail("Q " + shape_to_string(q.shape) + " must be [..., S, D]");
  if (k.rank() < 2) ctx.fail("K " + shape_to_string(k.shape) + " must be [..., T, D]");
  if (v.rank() < 2) ctx.fail("V " + shape_to_string(v.shape) + " must be [..., T, E]");
  const size_t r = q.shape.size();
  lead->assign(q.shape.begin(), q.shape.end() - 2);
  if (k.shape.size() != r || v.shape.size() != r ||
      !std::equal(lead->begin(), lead->end(), k.shape.begin()) ||
      !std::equal(lead->begin(), lead->end(), v.shape.begin()))
    ctx.fail("Q " + shape_to_string(q.shape) + ", K " + shape_to_string(k.shape) + " and V " +
             shape_to_string(v.shape) + " must have the same leading dimensions");
  AttentionDims& a = c->dims;
  a.batch = num_elements(*lead);
  a.s = q.shape[r - 2];
  a.d = q.shape[r - 1];
  a.t = k.shape[r - 2];
  a.e = v.shape[r - 1];
  if (k.shape[r - 1] != a.d)
    ctx.fail("K " + shape_to_string(k.shape) + " must end in Q's D = " + std::to_string(a.d) +
             " (Q " + shape_to_string(q.shape) + ")");
  if (v.shape[r - 2] != a.t)
    ctx.fail("V " + shape_to_string(v.shape) + " must have K's T = " + std::to_string(a.t) +
             " rows (K " + shape_to_string(k.shape) + ")");
  if (ctx.has_in(mi)) {
    const Tensor& mask = ctx.in(mi);
    ctx.expect_dtype(mask, DType::kFloat32, "Mask");
    if (mask.shape != Shape{a.s, a.t})
      ctx.fail("Mask " + shape_to_string(mask.shape) +
               " must be [S, T] = " + shape_to_string({a.s, a.t}));
    c->tensors.mask = mask.as<float>();
  }
  a.scale = ctx.attr_float("scale", 1.0);
  a.causal = ctx.attr_int("causal", 0) != 0;
  a.query_offset = ctx.attr_int("query_offset", 0);
  a.key_offset = ctx.attr_int("key_offset", 0);
  c->tensors.q = q.as<float>();
  c->tensors.k = k.as<float>();
  c->tensors.v = v.as<float>();
}

// Input i (named `name`): f32 of exactly `shape`.
const float* shaped_input(const KernelContext& ctx, size_t i, const char* name,
                          const Shape& shape) {
  const Tensor& t = ctx.in(i);
  ctx.expect_dtype(t, DType::kFloat32, name);
  if (t.shape != shape)
    ctx.fail(std::string(name) + " has shape " + shape_to_string(t.shape) + ", expected " +
             shape_to_string(shape));
  return t.as<float>();
}

// Output i (named `name`) when present: f32 of exactly `shape`; nullptr when absent.
float* shaped_output(const KernelContext& ctx, size_t i, const char* name, const Shape& shape) {
  if (!ctx.has_out(i)) return nullptr;
  const Tensor& t = ctx.out(i);
  ctx.expect_dtype(t, DType::kFloat32, name);
  if (t.shape != shape)
    ctx.fail(std::string(name) + " (output " + std::to_string(i) + ") has shape " +
             shape_to_string(t.shape) + ", expected " + shape_to_string(shape));
  return t.as<float>();
}

}  // namespace

AttentionCall attention_call(const KernelContext& ctx) {
  ctx.expect_arity(4, 2, "(Q, K, V, Mask?) -> (Y, LSE)");
  AttentionCall c;
  Shape lead;
  check_inputs(ctx, 0, 3, &c, &lead);
  const AttentionDims& a = c.dims;
  c.tensors.out_y = shaped_output(ctx, 0, "Y", with_tail(lead, {a.s, a.e}));
  c.tensors.out_lse = shaped_output(ctx, 1, "LSE", with_tail(lead, {a.s}));
  return c;
}

AttentionCall attention_grad_call(const KernelContext& ctx) {
  ctx.expect_arity(7, 3, "(dY, Q, K, V, Y, LSE, Mask?) -> (dQ, dK, dV)");
  AttentionCall c;
  Shape lead;
  check_inputs(ctx, 1, 6, &c, &lead);
  const AttentionDims& a = c.dims;
  c.tensors.dy = shaped_input(ctx, 0, "dY", with_tail(lead, {a.s, a.e}));
  c.tensors.y = shaped_input(ctx, 4, "Y", with_tail(lead, {a.s, a.e}));
  c.tensors.lse = shaped_input(ctx, 5, "LSE", with_tail(lead, {a.s}));
  c.tensors.dq = shaped_output(ctx, 0, "dQ", ctx.in(1).shape);
  c.tensors.dk = shaped_output(ctx, 1, "dK", ctx.in(2).shape);
  c.tensors.dv = shaped_output(ctx, 2, "dV", ctx.in(3).shape);
  return c;
}

void k_attention(const KernelContext& ctx) {
  // Per query row: LSE = log Σ_t exp(score), Y = Σ_t exp(score − LSE) V[t]; the whole row's
  // columns in one chunk.
  const AttentionCall c = attention_call(ctx);
  const AttentionDims& a = c.dims;
  const int64_t chunk = std::max<int64_t>(a.e, 1);
  std::vector<double> acc(static_cast<size_t>(chunk));
  for (int64_t row = 0; row < a.batch * a.s; ++row)
    attention_forward_row(c.tensors, a, row, acc.data(), chunk);
}

void k_attention_grad(const KernelContext& ctx) {
  // Δ per query row, then dQ per query row, then dK and dV per key row (each row's sums in
  // double, in order); absent outputs are not computed.
  AttentionCall c = attention_grad_call(ctx);
  const AttentionDims& a = c.dims;
  AttentionTensors& p = c.tensors;
  std::vector<double> delta;
  if (p.dq || p.dk) {
    delta.resize(static_cast<size_t>(a.batch * a.s));
    p.delta = delta.data();
    for (int64_t row = 0; row < a.batch * a.s; ++row) attention_delta_row(p, a, row);
  }
  const int64_t chunk = std::max<int64_t>({a.d, a.e, 1});
  std::vector<double> acc(2 * static_cast<size_t>(chunk));
  if (p.dq)
    for (int64_t row = 0; row < a.batch * a.s; ++row)
      attention_grad_q_row(p, a, row, acc.data(), chunk);
  if (p.dk || p.dv)
    for (int64_t row = 0; row < a.batch * a.t; ++row)
      attention_grad_kv_row(p, a, row, acc.data(), chunk);
}

}  // namespace planner::rt::kernels
