// Conv (1-3 and more spatial dims, groups, dilations, padding) by im2col + GEMM, and its
// gradients ConvGradData (col2im of W^T dY) and ConvGradFilter (dY col^T).
#include <algorithm>

#include "kernel_util.h"

namespace planner::rt::kernels {

std::vector<int64_t> Window::offsets() const {
  const size_t nsp = in.size();
  const int64_t kn = num_elements(kernel), pn = num_elements(out);
  std::vector<int64_t> table(static_cast<size_t>(kn * pn), -1);
  std::vector<int64_t> in_st = strides_of(in);
  std::vector<int64_t> kk(nsp, 0);
  for (int64_t ki = 0; ki < kn; ++ki) {
    std::vector<int64_t> oo(nsp, 0);
    for (int64_t p = 0; p < pn; ++p) {
      int64_t off = 0;
      bool valid = true;
      for (size_t d = 0; d < nsp && valid; ++d) {
        int64_t pos = oo[d] * strides[d] - pad_begin[d] + kk[d] * dilations[d];
        valid = pos >= 0 && pos < in[d];
        off += pos * in_st[d];
      }
      table[static_cast<size_t>(ki * pn + p)] = valid ? off : -1;
      for (int64_t d = static_cast<int64_t>(nsp) - 1; d >= 0; --d) {
        if (++oo[static_cast<size_t>(d)] < out[static_cast<size_t>(d)]) break;
        oo[static_cast<size_t>(d)] = 0;
      }
    }
    for (int64_t d = static_cast<int64_t>(nsp) - 1; d >= 0; --d) {
      if (++kk[static_cast<size_t>(d)] < kernel[static_cast<size_t>(d)]) break;
      kk[static_cast<size_t>(d)] = 0;
    }
  }
  return table;
}

Window window_geometry(const KernelContext& ctx, const Shape& in, const Shape& kernel,
                       bool ceil_mode) {
  const size_t n = in.size();
  Window w;
  w.in = in;
  w.kernel = kernel;
  w.strides = ctx.attr_ints("strides", Shape(n, 1));
  w.dilations = ctx.attr_ints("dilations", Shape(n, 1));
  Shape pads = ctx.attr_ints("pads", Shape(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n)
    ctx.fail("strides, dilations or pads do not match " + std::to_string(n) +
             " spatial dimensions");
  for (size_t d = 0; d < n; ++d)
    if (w.strides[d] < 1 || w.dilations[d] < 1 || kernel[d] < 1 || pads[d] < 0 || pads[n + d] < 0)
      ctx.fail("strides, dilations and kernel extents must be positive and pads non-negative");
  std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  w.pad_begin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(n));
  w.pad_end.assign(pads.begin() + static_cast<int64_t>(n), pads.end());
  w.out.resize(n);
  for (size_t d = 0; d < n; ++d) {
    const int64_t span = (kernel[d] - 1) * w.dilations[d] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t o = (in[d] + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>(0, (o - 1) * w.strides[d] + span - in[d]);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[d] = total - w.pad_begin[d];
    } else if (auto_pad == "VALID") {
      w.pad_begin[d] = w.pad_end[d] = 0;
    } else if (auto_pad != "NOTSET") {
      ctx.fail("unknown auto_pad \"" + auto_pad + "\"");
    }
    const int64_t room = in[d] + w.pad_begin[d] + w.pad_end[d] - span;
    if (room < 0)
      ctx.fail("kernel does not fit the padded input in spatial dimension " + std::to_string(d));
    int64_t o = ceil_mode ? (room + w.strides[d] - 1) / w.strides[d] + 1 : room / w.strides[d] + 1;
    // A window must start inside the input or its leading padding (the rule PyTorch and
    // onnxruntime follow in ceil mode).
    if (ceil_mode && (o - 1) * w.strides[d] >= in[d] + w.pad_begin[d]) --o;
    w.out[d] = o;
  }
  return w;
}

ConvShapes conv_shapes(const KernelContext& ctx, const Shape& x, const Shape& wt) {
  if (x.size() < 3 || wt.size() != x.size())
    ctx.fail("X " + shape_to_string(x) + " and W " + shape_to_string(wt) +
             " must have the same rank >= 3");
  ConvShapes s;
  s.n = x[0];
  s.c = x[1];
  s.m = wt[0];
  s.group = ctx.attr_int("group", 1);
  if (s.group < 1 || s.c % s.group != 0 || s.m % s.group != 0 || wt[1] * s.group != s.c)
    ctx.fail("group=" + std::to_string(s.group) + " does not fit X " + shape_to_string(x) +
             " and W " + shape_to_string(wt));
  Shape kernel(wt.begin() + 2, wt.end());
  Shape ks = ctx.attr_ints("kernel_shape", kernel);
  if (ks != kernel)
    ctx.fail("kernel_shape " + shape_to_string(ks) + " does not match W " + shape_to_string(wt));
  s.w = window_geometry(ctx, Shape(x.begin() + 2, x.end()), kernel, false);
  return s;
}

Shape conv_out_shape(const ConvShapes& s) {
  Shape y = {s.n, s.m};
  y.insert(y.end(), s.w.out.begin(), s.w.out.end());
  return y;
}

namespace {

void im2col(const float* x, int64_t channels, int64_t in_p, const std::vector<int64_t>& table,
            int64_t kn, int64_t pn, float* col) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t ki = 0; ki < kn; ++ki) {
      const int64_t* t = table.data() + ki * pn;
      float* dst = col + (c * kn + ki) * pn;
      const float* src = x + c * in_p;
      for (int64_t p = 0; p < pn; ++p) dst[p] = t[p] >= 0 ? src[t[p]] : 0.0f;
    }
}

void col2im(const float* col, int64_t channels, int64_t in_p, const std::vector<int64_t>& table,
            int64_t kn, int64_t pn, float* dx) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t ki = 0; ki < kn; ++ki) {
      const int64_t* t = table.data() + ki * pn;
      const float* src = col + (c * kn + ki) * pn;
      float* dst = dx + c * in_p;
      for (int64_t p = 0; p < pn; ++p)
        if (t[p] >= 0) dst[t[p]] += src[p];
    }
}

}  // namespace

void k_conv(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  ctx.expect_dtype(w, DType::kFloat32, "W");
  ConvShapes s = conv_shapes(ctx, x.shape, w.shape);
  ctx.expect_out(0, DType::kFloat32, conv_out_shape(s));
  const int64_t kn = num_elements(s.w.kernel), pn = num_elements(s.w.out),
                in_p = num_elements(s.w.in);
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  const float* bias = nullptr;
  if (ctx.has_in(2)) {
    ctx.expect_dtype(ctx.in(2), DType::kFloat32, "B");
    if (ctx.in(2).shape != Shape{s.m})
      ctx.fail("B has shape " + shape_to_string(ctx.in(2).shape) + ", expected [" +
               std::to_string(s.m) + "]");
    bias = ctx.in(2).as<float>();
  }
  std::vector<int64_t> table = s.w.offsets();
  std::vector<float> col(static_cast<size_t>(cg * kn * pn));
  const float* xp = x.as<float>();
  const float* wp = w.as<float>();
  float* yp = ctx.out(0).as<float>();
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t g = 0; g < s.group; ++g) {
      im2col(xp + (b * s.c + g * cg) * in_p, cg, in_p, table, kn, pn, col.data());
      float* y = yp + (b * s.m + g * mg) * pn;
      sgemm(false, false, mg, pn, cg * kn, 1.0f, wp + g * mg * cg * kn, cg * kn, col.data(), pn,
            0.0f, y, pn);
      if (bias)
        for (int64_t o = 0; o < mg; ++o)
          for (int64_t p = 0; p < pn; ++p) y[o * pn + p] += bias[g * mg + o];
    }
}

void k_conv_grad_data(const KernelContext& ctx) {
  // Inputs (dY, W); output dX has the forward X's shape, which fixes the geometry.
  const Tensor& dy = ctx.in(0);
  const Tensor& w = ctx.in(1);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(w, DType::kFloat32, "W");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  ConvShapes s = conv_shapes(ctx, dx.shape, w.shape);
  if (dy.shape != conv_out_shape(s))
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " +
             shape_to_string(conv_out_shape(s)));
  const int64_t kn = num_elements(s.w.kernel), pn = num_elements(s.w.out),
                in_p = num_elements(s.w.in);
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  std::vector<int64_t> table = s.w.offsets();
  std::vector<float> col(static_cast<size_t>(cg * kn * pn));
  float* dxp = dx.as<float>();
  std::fill(dxp, dxp + dx.numel(), 0.0f);
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t g = 0; g < s.group; ++g) {
      // dcol [cg*kn, pn] = W_g^T [cg*kn, mg] x dY_g [mg, pn]
      sgemm(true, false, cg * kn, pn, mg, 1.0f, w.as<float>() + g * mg * cg * kn, cg * kn,
            dy.as<float>() + (b * s.m + g * mg) * pn, pn, 0.0f, col.data(), pn);
      col2im(col.data(), cg, in_p, table, kn, pn, dxp + (b * s.c + g * cg) * in_p);
    }
}

void k_conv_grad_filter(const KernelContext& ctx) {
  // Inputs (X, dY); output dW has the forward W's shape.
  const Tensor& x = ctx.in(0);
  const Tensor& dy = ctx.in(1);
  const Tensor& dw = ctx.out(0);
  ctx.expect_dtype(x, DType::kFloat32, "X");
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dw, DType::kFloat32, "dW");
  ConvShapes s = conv_shapes(ctx, x.shape, dw.shape);
  if (dy.shape != conv_out_shape(s))
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " +
             shape_to_string(conv_out_shape(s)));
  const int64_t kn = num_elements(s.w.kernel), pn = num_elements(s.w.out),
                in_p = num_elements(s.w.in);
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  std::vector<int64_t> table = s.w.offsets();
  std::vector<float> col(static_cast<size_t>(cg * kn * pn));
  float* dwp = dw.as<float>();
  std::fill(dwp, dwp + dw.numel(), 0.0f);
  // Batch-major accumulation (b = 0, 1, …) keeps the summation order fixed.
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t g = 0; g < s.group; ++g) {
      im2col(x.as<float>() + (b * s.c + g * cg) * in_p, cg, in_p, table, kn, pn, col.data());
      // dW_g [mg, cg*kn] += dY_g [mg, pn] x col^T [pn, cg*kn]
      sgemm(false, true, mg, cg * kn, pn, 1.0f, dy.as<float>() + (b * s.m + g * mg) * pn, pn,
            col.data(), pn, 1.0f, dwp + g * mg * cg * kn, cg * kn);
    }
}

}  // namespace planner::rt::kernels
