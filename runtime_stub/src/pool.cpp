// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool and their gradients PoolGrad and
// GlobalPoolGrad.
#include <algorithm>
#include <limits>

#include "kernel_util.h"
#include "shape_ops.h"

namespace planner::rt::kernels {

namespace {

struct PoolShapes {
  int64_t planes;  // N * C
  Window w;
  Shape out;  // [N, C, *w.out]
};

PoolShapes pool_shapes(const KernelContext& ctx, const Shape& x) {
  if (x.size() < 3) ctx.fail("X " + shape_to_string(x) + " must have rank >= 3");
  Shape kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != x.size() - 2)
    ctx.fail("kernel_shape " + shape_to_string(kernel) + " does not match X " + shape_to_string(x));
  PoolShapes s;
  s.planes = x[0] * x[1];
  s.w = window_geometry(ctx, Shape(x.begin() + 2, x.end()), kernel,
                        ctx.attr_int("ceil_mode", 0) != 0);
  s.out = {x[0], x[1]};
  s.out.insert(s.out.end(), s.w.out.begin(), s.w.out.end());
  return s;
}

// AveragePool's divisor per output position: the window's positions inside the input, or
// inside the padded input when count_include_pad=1.
std::vector<float> average_divisors(const Window& w, const std::vector<int64_t>& table,
                                    bool include_pad) {
  const int64_t kn = num_elements(w.kernel), pn = num_elements(w.out);
  std::vector<float> div(static_cast<size_t>(pn), 0.0f);
  if (!include_pad) {
    for (int64_t p = 0; p < pn; ++p) {
      int64_t c = 0;
      for (int64_t ki = 0; ki < kn; ++ki) c += table[static_cast<size_t>(ki * pn + p)] >= 0;
      div[static_cast<size_t>(p)] = static_cast<float>(std::max<int64_t>(c, 1));
    }
    return div;
  }
  const size_t nsp = w.in.size();
  std::vector<std::vector<int64_t>> per_dim(nsp);
  for (size_t d = 0; d < nsp; ++d)
    for (int64_t o = 0; o < w.out[d]; ++o) {
      int64_t c = 0;
      for (int64_t k = 0; k < w.kernel[d]; ++k) {
        int64_t pos = o * w.strides[d] - w.pad_begin[d] + k * w.dilations[d];
        c += pos >= -w.pad_begin[d] && pos < w.in[d] + w.pad_end[d];
      }
      per_dim[d].push_back(c);
    }
  std::vector<int64_t> oo(nsp, 0);
  for (int64_t p = 0; p < pn; ++p) {
    int64_t c = 1;
    for (size_t d = 0; d < nsp; ++d) c *= per_dim[d][static_cast<size_t>(oo[d])];
    div[static_cast<size_t>(p)] = static_cast<float>(std::max<int64_t>(c, 1));
    for (int64_t d = static_cast<int64_t>(nsp) - 1; d >= 0; --d) {
      if (++oo[static_cast<size_t>(d)] < w.out[static_cast<size_t>(d)]) break;
      oo[static_cast<size_t>(d)] = 0;
    }
  }
  return div;
}

// The input offset of the maximum of window p (the first one in kernel scan order on ties),
// or -1 when the window holds no input element.
int64_t window_argmax(const float* x, const std::vector<int64_t>& table, int64_t kn, int64_t pn,
                      int64_t p) {
  int64_t best = -1;
  for (int64_t ki = 0; ki < kn; ++ki) {
    int64_t off = table[static_cast<size_t>(ki * pn + p)];
    if (off < 0) continue;
    if (best < 0 || x[off] > x[best] || (std::isnan(x[off]) && !std::isnan(x[best]))) best = off;
  }
  return best;
}

}  // namespace

void k_max_pool(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (ctx.attr_int("storage_order", 0) != 0) ctx.fail("storage_order=1 is not supported");
  PoolShapes s = pool_shapes(ctx, x.shape);
  ctx.expect_out(0, DType::kFloat32, s.out);
  const int64_t kn = num_elements(s.w.kernel), pn = num_elements(s.w.out),
                in_p = num_elements(s.w.in);
  std::vector<int64_t> table = s.w.offsets();
  const float* xp = x.as<float>();
  float* yp = ctx.out(0).as<float>();
  int64_t* ip = nullptr;
  if (ctx.has_out(1)) {
    ctx.expect_out(1, DType::kInt64, s.out);
    ip = ctx.out(1).as<int64_t>();
  }
  for (int64_t pl = 0; pl < s.planes; ++pl)
    for (int64_t p = 0; p < pn; ++p) {
      int64_t best = window_argmax(xp + pl * in_p, table, kn, pn, p);
      yp[pl * pn + p] = best < 0 ? -std::numeric_limits<float>::infinity() : xp[pl * in_p + best];
      if (ip) ip[pl * pn + p] = best < 0 ? -1 : pl * in_p + best;
    }
}

void k_average_pool(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  PoolShapes s = pool_shapes(ctx, x.shape);
  ctx.expect_out(0, DType::kFloat32, s.out);
  const int64_t kn = num_elements(s.w.kernel), pn = num_elements(s.w.out),
                in_p = num_elements(s.w.in);
  std::vector<int64_t> table = s.w.offsets();
  std::vector<float> div = average_divisors(s.w, table, ctx.attr_int("count_include_pad", 0) != 0);
  const float* xp = x.as<float>();
  float* yp = ctx.out(0).as<float>();
  for (int64_t pl = 0; pl < s.planes; ++pl)
    for (int64_t p = 0; p < pn; ++p) {
      float sum = 0;
      for (int64_t ki = 0; ki < kn; ++ki) {
        int64_t off = table[static_cast<size_t>(ki * pn + p)];
        if (off >= 0) sum += xp[pl * in_p + off];
      }
      yp[pl * pn + p] = sum / div[static_cast<size_t>(p)];
    }
}

namespace {

void global_pool(const KernelContext& ctx, bool max) {
  const Tensor& x = ctx.in(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (x.rank() < 3) ctx.fail("X " + shape_to_string(x.shape) + " must have rank >= 3");
  Shape out(x.shape.size(), 1);
  out[0] = x.shape[0];
  out[1] = x.shape[1];
  ctx.expect_out(0, DType::kFloat32, out);
  const int64_t planes = x.shape[0] * x.shape[1], in_p = x.numel() / std::max<int64_t>(planes, 1);
  const float* xp = x.as<float>();
  float* yp = ctx.out(0).as<float>();
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* v = xp + pl * in_p;
    if (max) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < in_p; ++i) m = std::max(m, v[i]);
      yp[pl] = m;
    } else {
      double sum = 0;
      for (int64_t i = 0; i < in_p; ++i) sum += v[i];
      yp[pl] = static_cast<float>(sum / static_cast<double>(in_p));
    }
  }
}

}  // namespace

void k_global_average_pool(const KernelContext& ctx) {
  global_pool(ctx, false);
}
void k_global_max_pool(const KernelContext& ctx) {
  global_pool(ctx, true);
}

void k_pool_grad(const KernelContext& ctx) {
  // Inputs (dY, X, Y) and the forward attributes plus op=MaxPool|AveragePool; output dX.
  PoolGeom geom;
  int64_t planes = 0;
  pool_grad_geometry(ctx, &geom, &planes);  // the checks; the window table comes from s
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const std::string op = ctx.attr_string("op", "");
  PoolShapes s = pool_shapes(ctx, x.shape);
  const int64_t kn = num_elements(s.w.kernel), pn = num_elements(s.w.out),
                in_p = num_elements(s.w.in);
  std::vector<int64_t> table = s.w.offsets();
  const float* xp = x.as<float>();
  const float* dyp = dy.as<float>();
  float* dx = ctx.out(0).as<float>();
  std::fill(dx, dx + x.numel(), 0.0f);
  if (op == "MaxPool") {
    for (int64_t pl = 0; pl < s.planes; ++pl)
      for (int64_t p = 0; p < pn; ++p) {
        int64_t best = window_argmax(xp + pl * in_p, table, kn, pn, p);
        if (best >= 0) dx[pl * in_p + best] += dyp[pl * pn + p];
      }
    return;
  }
  std::vector<float> div = average_divisors(s.w, table, ctx.attr_int("count_include_pad", 0) != 0);
  for (int64_t pl = 0; pl < s.planes; ++pl)
    for (int64_t p = 0; p < pn; ++p) {
      float g = dyp[pl * pn + p] / div[static_cast<size_t>(p)];
      for (int64_t ki = 0; ki < kn; ++ki) {
        int64_t off = table[static_cast<size_t>(ki * pn + p)];
        if (off >= 0) dx[pl * in_p + off] += g;
      }
    }
}

bool pool_grad_geometry(const KernelContext& ctx, PoolGeom* g, int64_t* planes) {
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  std::string op = ctx.attr_string("op", "");
  if (op != "MaxPool" && op != "AveragePool")
    ctx.fail("attribute op must be MaxPool or AveragePool");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(x, DType::kFloat32, "X");
  PoolShapes s = pool_shapes(ctx, x.shape);
  *planes = s.planes;
  *g = PoolGeom();
  const size_t nd = s.w.in.size();
  const bool fits = nd <= static_cast<size_t>(kPoolMaxDims);
  if (fits) {
    g->nd = static_cast<int>(nd);
    for (size_t d = 0; d < nd; ++d) {
      g->in[d] = s.w.in[d];
      g->kernel[d] = s.w.kernel[d];
      g->strides[d] = s.w.strides[d];
      g->dilations[d] = s.w.dilations[d];
      g->pad_begin[d] = s.w.pad_begin[d];
      g->pad_end[d] = s.w.pad_end[d];
      g->out[d] = s.w.out[d];
    }
    g->in_p = num_elements(s.w.in);
    g->out_p = num_elements(s.w.out);
    g->kernel_n = num_elements(s.w.kernel);
    g->max = op == "MaxPool";
    g->include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  }
  // Checked after the geometry is filled in, so a caller can learn dY's shape from it.
  if (dy.shape != s.out)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " + shape_to_string(s.out));
  ctx.expect_out(0, DType::kFloat32, x.shape);
  return fits;
}

GlobalPoolGrad global_pool_grad_shapes(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  std::string op = ctx.attr_string("op", "");
  if (op != "GlobalAveragePool" && op != "GlobalMaxPool")
    ctx.fail("attribute op must be GlobalAveragePool or GlobalMaxPool");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(x, DType::kFloat32, "X");
  if (x.rank() < 3) ctx.fail("X must have rank >= 3");
  Shape ys(x.shape.size(), 1);
  ys[0] = x.shape[0];
  ys[1] = x.shape[1];
  if (dy.shape != ys)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " + shape_to_string(ys));
  ctx.expect_out(0, DType::kFloat32, x.shape);
  GlobalPoolGrad g;
  g.max = op == "GlobalMaxPool";
  g.planes = x.shape[0] * x.shape[1];
  g.in_p = x.numel() / std::max<int64_t>(g.planes, 1);
  return g;
}

void k_global_pool_grad(const KernelContext& ctx) {
  // Inputs (dY, X), op=GlobalAveragePool|GlobalMaxPool; output dX.
  const Tensor& dy = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const GlobalPoolGrad g = global_pool_grad_shapes(ctx);
  const int64_t planes = g.planes, in_p = g.in_p;
  const std::string op = g.max ? "GlobalMaxPool" : "GlobalAveragePool";
  const float* xp = x.as<float>();
  const float* dyp = dy.as<float>();
  float* dx = ctx.out(0).as<float>();
  std::fill(dx, dx + x.numel(), 0.0f);
  for (int64_t pl = 0; pl < planes; ++pl) {
    if (op == "GlobalAveragePool") {
      float g = dyp[pl] / static_cast<float>(in_p);
      for (int64_t i = 0; i < in_p; ++i) dx[pl * in_p + i] = g;
    } else if (in_p > 0) {
      int64_t best = 0;
      for (int64_t i = 1; i < in_p; ++i)
        if (xp[pl * in_p + i] > xp[pl * in_p + best]) best = i;
      dx[pl * in_p + best] = dyp[pl];
    }
  }
}

}  // namespace planner::rt::kernels
