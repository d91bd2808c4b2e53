// The kernels of ai.planner.Attention and AttentionGrad (src/attention.cpp, attention_math.h):
// the forward pass against a materialized reference (scores, softmax, product) with leading
// dimensions or none, causal masks with shard offsets, a Mask and rows with no key; the
// gradients against central differences of Σ Y·W, absent outputs and shards of the query rows;
// bad inputs; and the cases attention_torch_check.py compares with PyTorch (written only when
// PLANNER_ATTENTION_TORCH_DUMP names a file).
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "rt_test_util.h"

using namespace rt_test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Geometry {
  Shape lead;
  int64_t s = 0, t = 0, d = 0, e = 0;
  int64_t batch() const { return planner::rt::num_elements(lead); }
};

struct Options {
  double scale = 1;
  bool causal = false;
  int64_t query_offset = 0, key_offset = 0;
};

Attributes attributes(const Options& o) {
  return {{"scale", o.scale},
          {"causal", int64_t{o.causal ? 1 : 0}},
          {"query_offset", o.query_offset},
          {"key_offset", o.key_offset}};
}

Shape tail(const Shape& lead, std::initializer_list<int64_t> rest) {
  Shape s = lead;
  s.insert(s.end(), rest);
  return s;
}

// A call's inputs: Q, K, V and (when `mask`) a Mask with a few -inf entries.
struct Inputs {
  Geometry g;
  Buf q, k, v, mask;
  bool has_mask = false;
};

Inputs inputs(const Geometry& g, uint64_t seed, bool mask) {
  Inputs in{g,
            R(tail(g.lead, {g.s, g.d}), seed, -1.5, 1.5),
            R(tail(g.lead, {g.t, g.d}), seed + 1, -1.5, 1.5),
            R(tail(g.lead, {g.t, g.e}), seed + 2),
            R({g.s, g.t}, seed + 3),
            mask};
  if (mask)
    for (int64_t i = 0; i < in.mask.n(); i += 5) in.mask.f()[i] = -INFINITY;
  return in;
}

std::vector<Tensor> forward_inputs(const Inputs& in) {
  std::vector<Tensor> ins = {in.q.t, in.k.t, in.v.t};
  if (in.has_mask) ins.push_back(in.mask.t);
  return ins;
}

struct Forward {
  Buf y, lse;
};

Forward forward(const Inputs& in, const Options& o) {
  Forward f{Z(tail(in.g.lead, {in.g.s, in.g.e})), Z(tail(in.g.lead, {in.g.s}))};
  run_planner("Attention", attributes(o), forward_inputs(in), {f.y.t, f.lse.t});
  return f;
}

std::vector<double> doubles(const Buf& b) {
  return std::vector<double>(b.f(), b.f() + b.n());
}

// The contract, materialized in double: per slice the S x T scores, their log-sum-exp, the
// softmax and its product with V.
void reference(const Geometry& g, const Options& o, const std::vector<double>& q,
               const std::vector<double>& k, const std::vector<double>& v, const Buf* mask,
               std::vector<double>* y, std::vector<double>* lse) {
  y->assign(static_cast<size_t>(g.batch() * g.s * g.e), 0.0);
  lse->assign(static_cast<size_t>(g.batch() * g.s), -kInf);
  std::vector<double> score(static_cast<size_t>(g.t));
  for (int64_t b = 0; b < g.batch(); ++b)
    for (int64_t s = 0; s < g.s; ++s) {
      double m = -kInf;
      for (int64_t t = 0; t < g.t; ++t) {
        double sc = 0;
        for (int64_t i = 0; i < g.d; ++i)
          sc += q[static_cast<size_t>((b * g.s + s) * g.d + i)] *
                k[static_cast<size_t>((b * g.t + t) * g.d + i)];
        sc *= o.scale;
        if (mask) sc += mask->f()[s * g.t + t];
        if (o.causal && t + o.key_offset > s + o.query_offset) sc = -kInf;
        score[static_cast<size_t>(t)] = sc;
        m = std::max(m, sc);
      }
      if (m == -kInf) continue;
      double sum = 0;
      for (double sc : score) sum += std::exp(sc - m);
      const double l = m + std::log(sum);
      (*lse)[static_cast<size_t>(b * g.s + s)] = l;
      for (int64_t t = 0; t < g.t; ++t) {
        const double p = std::exp(score[static_cast<size_t>(t)] - l);
        for (int64_t e = 0; e < g.e; ++e)
          (*y)[static_cast<size_t>((b * g.s + s) * g.e + e)] +=
              p * v[static_cast<size_t>((b * g.t + t) * g.e + e)];
      }
    }
}

std::vector<float> floats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// The kernel's Y and LSE against the reference (rows with no key: Y = 0, LSE = -inf).
void check_forward(const Inputs& in, const Options& o) {
  const Forward f = forward(in, o);
  std::vector<double> y, lse;
  reference(in.g, o, doubles(in.q), doubles(in.k), doubles(in.v), in.has_mask ? &in.mask : nullptr,
            &y, &lse);
  expect_close(f.y.values(), floats(y), 1e-6, 1e-5);
  for (size_t i = 0; i < lse.size(); ++i) {
    CAPTURE(i);
    if (lse[i] == -kInf)
      CHECK(f.lse.f()[i] == -INFINITY);
    else
      CHECK(f.lse.f()[i] == doctest::Approx(lse[i]).epsilon(1e-6));
  }
}

// AttentionGrad with dY = w on the forward's Y and LSE; outputs present where `want` says.
struct Grads {
  Buf dq, dk, dv;
};

Grads gradients(const Inputs& in, const Options& o, const Forward& f, const Buf& w,
                std::array<bool, 3> want = {true, true, true}) {
  Grads r{Z(in.q.t.shape), Z(in.k.t.shape), Z(in.v.t.shape)};
  std::vector<Tensor> ins = {w.t, in.q.t, in.k.t, in.v.t, f.y.t, f.lse.t};
  if (in.has_mask) ins.push_back(in.mask.t);
  run_planner(
      "AttentionGrad", attributes(o), ins,
      {want[0] ? r.dq.t : Tensor(), want[1] ? r.dk.t : Tensor(), want[2] ? r.dv.t : Tensor()});
  return r;
}

// Central differences (in double, on the reference) of L = Σ Y·W with respect to input `which`
// (0 Q, 1 K, 2 V).
std::vector<float> numeric_grad(const Inputs& in, const Options& o, const Buf& w, int which) {
  std::vector<double> x[3] = {doubles(in.q), doubles(in.k), doubles(in.v)};
  const Buf* mask = in.has_mask ? &in.mask : nullptr;
  auto loss = [&] {
    std::vector<double> y, lse;
    reference(in.g, o, x[0], x[1], x[2], mask, &y, &lse);
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += y[i] * w.f()[i];
    return l;
  };
  const double h = 1e-6;
  std::vector<float> g(x[which].size());
  for (size_t i = 0; i < g.size(); ++i) {
    const double keep = x[which][i];
    x[which][i] = keep + h;
    const double up = loss();
    x[which][i] = keep - h;
    const double down = loss();
    x[which][i] = keep;
    g[i] = static_cast<float>((up - down) / (2 * h));
  }
  return g;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const planner::rt::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Rows [r0, r1) of every slice of a [..., rows, cols] tensor.
Buf rows_of(const Buf& x, int64_t r0, int64_t r1) {
  const Shape& s = x.t.shape;
  const int64_t rows = s[s.size() - 2], cols = s.back(), slices = x.n() / (rows * cols);
  Shape out = s;
  out[out.size() - 2] = r1 - r0;
  Buf r = Z(out);
  for (int64_t b = 0; b < slices; ++b)
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t c = 0; c < cols; ++c)
        r.f()[(b * (r1 - r0) + i - r0) * cols + c] = x.f()[(b * rows + i) * cols + c];
  return r;
}

// Shape [..., rows] viewed as [..., rows, 1] for rows_of.
Buf rows_of_vector(const Buf& x, int64_t r0, int64_t r1) {
  Buf v = x.clone();
  v.t.shape.push_back(1);
  Buf r = rows_of(v, r0, r1);
  r.t.shape.pop_back();
  return r;
}

}  // namespace

TEST_CASE("Attention: 4-D inputs against the materialized reference") {
  const Geometry g{{2, 3}, 5, 7, 4, 6};
  struct Case {
    const char* name;
    Options o;
    bool mask;
  };
  const Case cases[] = {{"plain", {0.5}, false},
                        {"causal", {0.5, true}, false},
                        {"causal, offsets", {0.7, true, 3, 1}, false},
                        {"causal, keys after the queries", {1.0, true, 0, 2}, false},
                        {"mask", {0.5}, true},
                        {"causal and mask", {0.5, true, 2, 0}, true}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    check_forward(inputs(g, 11, c.mask), c.o);
  }
}

TEST_CASE("Attention: 3-D and 2-D inputs, and a head wider than the device's chunk") {
  check_forward(inputs({{3}, 5, 7, 4, 6}, 21, false), {0.5, true});
  check_forward(inputs({{}, 5, 7, 4, 6}, 22, true), {0.5});
  check_forward(inputs({{}, 6, 9, 40, 37}, 23, false), {0.2, true, 3, 0});
}

TEST_CASE("Attention: rows with no key give Y = 0 and LSE = -inf, and no gradient") {
  // key_offset 2: queries 0 and 1 come before every key.
  const Inputs in = inputs({{2}, 4, 5, 3, 2}, 31, false);
  const Options o{1.0, true, 0, 2};
  check_forward(in, o);
  const Forward f = forward(in, o);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < 2; ++s) {
      CHECK(f.lse.f()[b * 4 + s] == -INFINITY);
      CHECK(f.y.f()[(b * 4 + s) * 2] == 0.0f);
      CHECK(f.y.f()[(b * 4 + s) * 2 + 1] == 0.0f);
    }
  const Grads g = gradients(in, o, f, R(f.y.t.shape, 32));
  for (const Buf* b : {&g.dq, &g.dk, &g.dv})
    for (float x : b->values()) CHECK(std::isfinite(x));
  for (int64_t i = 0; i < 2 * 3; ++i) CHECK(g.dq.f()[i] == 0.0f);  // slice 0, rows 0 and 1
  // A Mask row of -inf, and no keys at all.
  Inputs masked = inputs({{}, 3, 4, 2, 2}, 33, true);
  for (int64_t t = 0; t < 4; ++t) masked.mask.f()[4 + t] = -INFINITY;
  check_forward(masked, {});
  CHECK(forward(masked, {}).lse.f()[1] == -INFINITY);
  const Forward none = forward(inputs({{2}, 3, 0, 4, 5}, 34, false), {});
  for (float x : none.y.values()) CHECK(x == 0.0f);
  for (float x : none.lse.values()) CHECK(x == -INFINITY);
}

TEST_CASE("Attention: a shard of the query rows computes those rows of the whole") {
  const Inputs whole = inputs({{2, 2}, 8, 8, 4, 5}, 41, true);
  const Options o{0.5, true};
  const Forward all = forward(whole, o);
  for (const auto& rows : std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 6}, {6, 8}}) {
    const int64_t q0 = rows.first, q1 = rows.second;  // not a binding: CAPTURE takes it
    CAPTURE(q0);
    Inputs shard = whole;
    shard.g.s = q1 - q0;
    shard.q = rows_of(whole.q, q0, q1);
    shard.mask = rows_of(whole.mask, q0, q1);
    Options so = o;
    so.query_offset = q0;
    const Forward part = forward(shard, so);
    CHECK(part.y.values() == rows_of(all.y, q0, q1).values());
    CHECK(part.lse.values() == rows_of_vector(all.lse, q0, q1).values());
  }
  // The last rows of a longer sequence against all of its keys (a decoder's new tokens).
  Inputs tail_rows = whole;
  tail_rows.g.s = 2;
  tail_rows.q = rows_of(whole.q, 6, 8);
  tail_rows.mask = rows_of(whole.mask, 6, 8);
  check_forward(tail_rows, {0.5, true, 6, 0});
}

TEST_CASE("AttentionGrad: central differences of L = Σ Y·W") {
  const Geometry g{{2}, 4, 5, 3, 4};
  struct Case {
    const char* name;
    Options o;
    bool mask;
  };
  const Case cases[] = {{"plain", {0.6}, false},
                        {"causal", {0.6, true}, false},
                        {"causal, offsets", {0.8, true, 2, 1}, false},
                        {"mask", {0.6}, true},
                        {"causal and mask", {1.0, true}, true}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Inputs in = inputs(g, 51, c.mask);
    const Forward f = forward(in, c.o);
    const Buf w = R(f.y.t.shape, 52);
    const Grads an = gradients(in, c.o, f, w);
    // The analytic gradients are f32 from f32 Y and LSE; the differences are in double.
    expect_close(an.dq.values(), numeric_grad(in, c.o, w, 0), 2e-6, 1e-5);
    expect_close(an.dk.values(), numeric_grad(in, c.o, w, 1), 2e-6, 1e-5);
    expect_close(an.dv.values(), numeric_grad(in, c.o, w, 2), 2e-6, 1e-5);
  }
  // Through the kernel itself, in f32 (check_grad's step and tolerances).
  const Options o{0.6, true, 1, 0};
  const Inputs in = inputs(g, 53, true);
  const Forward f = forward(in, o);
  const Buf w = R(f.y.t.shape, 54);
  const Grads an = gradients(in, o, f, w);
  auto y = [&] { return forward(in, o).y.values(); };
  check_grad(y, in.q, w.values(), an.dq.values());
  check_grad(y, in.k, w.values(), an.dk.values());
  check_grad(y, in.v, w.values(), an.dv.values());
}

TEST_CASE("AttentionGrad: absent outputs are skipped, the others unchanged") {
  const Inputs in = inputs({{2, 2}, 5, 6, 3, 4}, 61, true);
  const Options o{0.5, true, 1, 0};
  const Forward f = forward(in, o);
  const Buf w = R(f.y.t.shape, 62);
  const Grads all = gradients(in, o, f, w);
  for (int only = 0; only < 3; ++only) {
    CAPTURE(only);
    const Grads one = gradients(in, o, f, w, {only == 0, only == 1, only == 2});
    const Buf* got[3] = {&one.dq, &one.dk, &one.dv};
    const Buf* want[3] = {&all.dq, &all.dk, &all.dv};
    for (int i = 0; i < 3; ++i)
      for (float x : got[i]->values())
        if (i != only) CHECK(x == 0.0f);  // never written
    CHECK(got[only]->values() == want[only]->values());
  }
  gradients(in, o, f, w, {false, false, false});  // nothing wanted: nothing to do
}

TEST_CASE("AttentionGrad: shards of the query rows") {
  // A shard's dQ rows are the whole's; its dK and dV are its rows' share, summed over shards.
  const Inputs whole = inputs({{2}, 7, 7, 3, 4}, 71, true);
  const Options o{0.5, true};
  const Forward f = forward(whole, o);
  const Buf w = R(f.y.t.shape, 72);
  const Grads all = gradients(whole, o, f, w);
  std::vector<float> dk(static_cast<size_t>(all.dk.n()), 0.0f),
      dv(static_cast<size_t>(all.dv.n()), 0.0f);
  for (const auto& rows : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 7}}) {
    const int64_t q0 = rows.first, q1 = rows.second;
    CAPTURE(q0);
    Inputs shard = whole;
    shard.g.s = q1 - q0;
    shard.q = rows_of(whole.q, q0, q1);
    shard.mask = rows_of(whole.mask, q0, q1);
    const Forward part{rows_of(f.y, q0, q1), rows_of_vector(f.lse, q0, q1)};
    Options so = o;
    so.query_offset = q0;
    const Grads g = gradients(shard, so, part, rows_of(w, q0, q1));
    CHECK(g.dq.values() == rows_of(all.dq, q0, q1).values());
    for (size_t i = 0; i < dk.size(); ++i) dk[i] += g.dk.f()[i];
    for (size_t i = 0; i < dv.size(); ++i) dv[i] += g.dv.f()[i];
  }
  expect_close(dk, all.dk.values(), 1e-6, 1e-5);
  expect_close(dv, all.dv.values(), 1e-6, 1e-5);
}

TEST_CASE("Attention and AttentionGrad: bad inputs fail naming the node and the input") {
  const Geometry g{{2, 3}, 5, 7, 4, 6};
  const Inputs in = inputs(g, 81, true);
  const Forward f = forward(in, {});
  Buf y = Z(f.y.t.shape), lse = Z(f.lse.t.shape);
  auto fwd = [&](std::vector<Tensor> ins, std::vector<Tensor> outs) {
    return error_of([&] { run_planner("Attention", {}, ins, outs); });
  };
  auto has = [](const std::string& msg, const std::string& what) {
    CAPTURE(msg);
    CHECK(msg.find("node 'n' (") != std::string::npos);
    CHECK(msg.find(what) != std::string::npos);
  };
  Buf k5 = R({2, 3, 7, 5}, 82), v8 = R({2, 3, 8, 6}, 83), k_lead = R({2, 4, 7, 4}, 84);
  has(fwd({in.q.t, k5.t, in.v.t}, {y.t, lse.t}), "K [2,3,7,5] must end in Q's D = 4");
  has(fwd({in.q.t, in.k.t, v8.t}, {y.t, lse.t}), "V [2,3,8,6] must have K's T = 7");
  has(fwd({in.q.t, k_lead.t, in.v.t}, {y.t, lse.t}), "must have the same leading dimensions");
  has(fwd({in.q.t, in.k.t, in.v.t, R({7, 5}, 85).t}, {y.t, lse.t}), "Mask [7,5] must be [S, T]");
  has(fwd({R({4}, 86).t, in.k.t, in.v.t}, {y.t, lse.t}), "Q [4] must be [..., S, D]");
  has(fwd({I64({2, 2}, {1, 2, 3, 4}).t, in.k.t, in.v.t}, {y.t, lse.t}), "Q has type");
  has(fwd({in.q.t, in.k.t, in.v.t}, {Z({2, 3, 5, 5}).t, lse.t}), "Y (output 0) has shape");
  has(fwd({in.q.t, in.k.t, in.v.t}, {y.t, Z({2, 3, 5, 1}).t}), "LSE (output 1) has shape");
  has(fwd({in.q.t, in.k.t, in.v.t, in.mask.t, in.mask.t}, {y.t, lse.t}),
      "expected (Q, K, V, Mask?) -> (Y, LSE)");
  const Buf w = R(f.y.t.shape, 87);
  Buf dq = Z(in.q.t.shape), dk = Z(in.k.t.shape), dv = Z(in.v.t.shape);
  auto bwd = [&](std::vector<Tensor> ins, std::vector<Tensor> outs) {
    return error_of([&] { run_planner("AttentionGrad", {}, ins, outs); });
  };
  has(bwd({w.t, in.q.t, in.k.t, in.v.t, f.y.t, Z({2, 3, 4}).t}, {dq.t, dk.t, dv.t}),
      "LSE has shape [2,3,4], expected [2,3,5]");
  has(bwd({R({2, 3, 5, 7}, 88).t, in.q.t, in.k.t, in.v.t, f.y.t, f.lse.t}, {dq.t, dk.t, dv.t}),
      "dY has shape [2,3,5,7], expected [2,3,5,6]");
  has(bwd({w.t, in.q.t, in.k.t, in.v.t, Z({2, 3, 5}).t, f.lse.t}, {dq.t, dk.t, dv.t}),
      "Y has shape");
  has(bwd({w.t, in.q.t, in.k.t, in.v.t, f.y.t, f.lse.t}, {dq.t, Z({2, 3, 7, 5}).t, dv.t}),
      "dK (output 1) has shape [2,3,7,5], expected [2,3,7,4]");
  has(bwd({w.t, in.q.t, k5.t, in.v.t, f.y.t, f.lse.t}, {dq.t, dk.t, dv.t}), "K [2,3,7,5]");
  has(bwd({w.t, in.q.t, in.k.t}, {dq.t}), "required input 3 is missing");
}

TEST_CASE("Attention: the cases attention_torch_check.py compares with PyTorch") {
  const char* path = std::getenv("PLANNER_ATTENTION_TORCH_DUMP");
  if (!path) return;  // run by attention_torch_check.py only
  FILE* out = std::fopen(path, "w");
  REQUIRE(out != nullptr);
  struct Case {
    const char* name;
    Geometry g;
    Options o;
    bool mask;
  };
  const Case cases[] = {
      {"4d", {{2, 3}, 5, 7, 4, 6}, {0.5}, false},
      {"causal", {{2, 2}, 6, 6, 8, 5}, {1 / std::sqrt(8.0), true}, false},
      {"causal_rectangular", {{3}, 7, 4, 4, 3}, {0.5, true}, false},
      {"causal_offsets_mask", {{2}, 3, 7, 4, 4}, {0.5, true, 4, 0}, true},
      {"mask_2d", {{}, 4, 9, 5, 3}, {0.3}, true},
      {"rows_without_keys", {{2}, 4, 5, 3, 2}, {1.0, true, 0, 2}, false},
      {"wide", {{2}, 33, 40, 40, 36}, {0.15, true, 7, 0}, true},
  };
  auto write = [&](const char* name, const Buf& b) {
    std::fprintf(out, "tensor %s %lld", name, static_cast<long long>(b.n()));
    for (float x : b.values()) std::fprintf(out, " %.9g", x);
    std::fprintf(out, "\n");
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    const Inputs in = inputs(c.g, 100 + 10 * i, c.mask);
    const Forward f = forward(in, c.o);
    const Buf w = R(f.y.t.shape, 105 + 10 * i);
    const Grads g = gradients(in, c.o, f, w);
    std::fprintf(out, "case %s\nattrs %.17g %d %lld %lld\nlead %zu", c.name, c.o.scale,
                 c.o.causal ? 1 : 0, static_cast<long long>(c.o.query_offset),
                 static_cast<long long>(c.o.key_offset), c.g.lead.size());
    for (int64_t d : c.g.lead) std::fprintf(out, " %lld", static_cast<long long>(d));
    std::fprintf(out, "\ndims %lld %lld %lld %lld\n", static_cast<long long>(c.g.s),
                 static_cast<long long>(c.g.t), static_cast<long long>(c.g.d),
                 static_cast<long long>(c.g.e));
    write("Q", in.q);
    write("K", in.k);
    write("V", in.v);
    if (c.mask) write("Mask", in.mask);
    write("W", w);
    write("Y", f.y);
    write("LSE", f.lse);
    write("dQ", g.dq);
    write("dK", g.dk);
    write("dV", g.dv);
    std::fprintf(out, "end\n");
  }
  REQUIRE(std::fclose(out) == 0);
}
