// The cuda backend's data movement: the cpu kernels' checks and copy plans (shape_ops.h,
// copy_plan.h) on the host, the copies on the device. Small parameter inputs (starts, pads,
// shapes, repeats, split sizes) are read on the host: from the launcher's host copy where they
// are constants of the program (no wait), else copied back (one counted host sync).
#include <optional>

#include "../copy_plan.h"
#include "../shape_ops.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"
#include "precision_kernels.h"

namespace planner::rt::kernels {

namespace {

cudaStream_t stream() {
  return cuda::context().stream;
}

// `ctx` with the inputs at `small` readable on the host.
class HostParams {
 public:
  HostParams(const KernelContext& ctx, std::initializer_list<size_t> small)
      : inputs_(ctx.inputs.begin(), ctx.inputs.end()), storage_(inputs_.size()) {
    for (size_t i : small)
      if (ctx.has_in(i)) inputs_[i] = cuda::host_view(ctx.in(i), storage_[i]);
    ctx_.emplace(KernelContext{ctx.op_type, ctx.node, ctx.attrs, inputs_, ctx.outputs});
  }
  const KernelContext& ctx() const { return *ctx_; }

 private:
  std::vector<Tensor> inputs_;
  std::vector<std::vector<uint8_t>> storage_;
  std::optional<KernelContext> ctx_;
};

// Runs `plan` on device tensors: the fill of output 0, then each copy.
void run_plan(const CopyPlan& plan, const std::vector<const void*>& inputs,
              const std::vector<const Tensor*>& outputs, size_t elem,
              const void* fill_value = nullptr) {
  if (plan.fill == CopyFill::kZero && outputs[0]->bytes())
    PLANNER_CUDA_CHECK(cudaMemsetAsync(outputs[0]->data, 0, outputs[0]->bytes(), stream()));
  if (plan.fill == CopyFill::kValue)
    cuda::launch_fill(outputs[0]->data, outputs[0]->numel(), fill_value, static_cast<int>(elem),
                      stream());
  for (const StridedCopy& c : plan.copies)
    cuda::launch_copy_plan(c, inputs[static_cast<size_t>(c.input)],
                           outputs[static_cast<size_t>(c.output)]->data, static_cast<int>(elem),
                           stream());
}

bool is_index_type(DType d) {
  return d == DType::kInt64 || d == DType::kInt32;
}

}  // namespace

void c_slice(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  HostParams hp(ctx, {1, 2, 3, 4});
  const SliceRegion r = slice_region(hp.ctx(), x.shape, 1);
  ctx.expect_out(0, x.dtype, r.extent);
  CopyPlan plan;
  if (!slice_plan(x.shape, r, &plan)) return host_fallback(ctx, k_slice);
  run_plan(plan, {x.data}, {&ctx.out(0)}, dtype_size(x.dtype));
}

void c_slice_grad(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  HostParams hp(ctx, {1, 2, 3, 4});
  const SliceRegion r = slice_region(hp.ctx(), dx.shape, 1);
  if (dy.shape != r.extent)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " +
             shape_to_string(r.extent));
  CopyPlan plan;
  if (!slice_grad_plan(dx.shape, r, &plan)) return host_fallback(ctx, k_slice_grad);
  run_plan(plan, {dy.data}, {&dx}, sizeof(float));
}

void c_concat(const KernelContext& ctx) {
  int64_t axis = 0;
  const Shape out = concat_shape(ctx, &axis);
  ctx.expect_out(0, ctx.in(0).dtype, out);
  std::vector<Shape> shapes;
  std::vector<const void*> data;
  for (const Tensor& t : ctx.inputs) {
    shapes.push_back(t.shape);
    data.push_back(t.data);
  }
  CopyPlan plan;
  if (!concat_plan(shapes, axis, &plan)) return host_fallback(ctx, k_concat);
  run_plan(plan, data, {&ctx.out(0)}, dtype_size(ctx.in(0).dtype));
}

void c_split(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  HostParams hp(ctx, {1});
  int64_t axis = 0;
  const std::vector<int64_t> sizes = split_sizes(hp.ctx(), x, &axis);
  CopyPlan plan;
  if (!split_plan(x.shape, axis, sizes, &plan)) return host_fallback(ctx, k_split);
  std::vector<const Tensor*> outs;
  for (const Tensor& t : ctx.outputs) outs.push_back(&t);
  run_plan(plan, {x.data}, outs, dtype_size(x.dtype));
}

void c_pad(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  HostParams hp(ctx, {1, 2, 3});
  const KernelContext& h = hp.ctx();
  const PadSpec p =
      pad_spec(h, x.shape, h.has_in(1) ? &h.in(1) : nullptr, h.has_in(3) ? &h.in(3) : nullptr);
  ctx.expect_out(0, x.dtype, p.out);
  double value = ctx.attr_float("value", 0.0);
  if (h.has_in(2)) {
    if (h.in(2).numel() != 1) ctx.fail("constant_value must be a scalar");
    value = load_as_double(h.in(2), 0);
  }
  const uint64_t fill = pad_fill_bits(x.dtype, value);
  if (x.rank() > kCopyMaxDims) return host_fallback(ctx, k_pad);
  CopyPlan plan;
  if (pad_plan(x.shape, p, &plan))
    return run_plan(plan, {x.data}, {&ctx.out(0)}, dtype_size(x.dtype), &fill);
  // Reflect, edge and wrap: every output element gathers its source.
  cuda::launch_pad_gather(pad_geom(ctx, p, x.shape), x.data, ctx.out(0).data, ctx.out(0).numel(),
                          static_cast<int>(dtype_size(x.dtype)), fill, stream());
}

void c_pad_grad(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  HostParams hp(ctx, {1, 2, 3});
  const KernelContext& h = hp.ctx();
  const PadSpec p =
      pad_spec(h, dx.shape, h.has_in(1) ? &h.in(1) : nullptr, h.has_in(3) ? &h.in(3) : nullptr);
  if (dy.shape != p.out)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " + shape_to_string(p.out));
  if (dx.rank() > kCopyMaxDims) return host_fallback(ctx, k_pad_grad);
  CopyPlan plan;
  if (pad_grad_plan(dx.shape, p, &plan)) return run_plan(plan, {dy.data}, {&dx}, sizeof(float));
  // Reflect, edge and wrap: every dX element sums the dY elements that read it.
  cuda::launch_pad_grad(pad_geom(ctx, p, dx.shape), dy.as<float>(), dx.as<float>(), dx.numel(),
                        stream());
}

// The generators: parameters read on the host (program constants without a wait), values
// written on the device.
void c_range(const KernelContext& ctx) {
  HostParams hp(ctx, {0, 1, 2});
  const RangeSpec r = range_spec(hp.ctx());
  cuda::launch_range(static_cast<int>(r.dtype), r.start, r.delta, r.fstart, r.fdelta,
                     ctx.out(0).data, r.n, stream());
}

void c_constant_of_shape(const KernelContext& ctx) {
  HostParams hp(ctx, {0});
  const double v = constant_of_shape_value(hp.ctx());
  const Tensor& y = ctx.out(0);
  const uint64_t bits = pad_fill_bits(y.dtype, v);
  cuda::launch_fill(y.data, y.numel(), &bits, static_cast<int>(dtype_size(y.dtype)), stream());
}

void c_constant(const KernelContext& ctx) {
  // The value is the node's attribute: formed on the host by the cpu kernel, then one element
  // filled or the whole tensor copied up (a literal, typically a few bytes).
  const Tensor& y = ctx.out(0);
  std::vector<uint64_t> host((y.bytes() + 7) / 8 + 1);
  std::vector<Tensor> outs = {Tensor(y.dtype, y.shape, host.data())};
  k_constant(KernelContext{ctx.op_type, ctx.node, ctx.attrs, ctx.inputs, outs});
  if (y.numel() == 1)
    return cuda::launch_fill(y.data, 1, host.data(), static_cast<int>(dtype_size(y.dtype)),
                             stream());
  if (y.bytes())
    PLANNER_CUDA_CHECK(
        cudaMemcpyAsync(y.data, host.data(), y.bytes(), cudaMemcpyHostToDevice, stream()));
}

void c_expand(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  HostParams hp(ctx, {1});
  const Shape target = hp.ctx().ints_of(hp.ctx().in(1), "shape");
  const Shape out = ctx.broadcast({x.shape, target});
  ctx.expect_out(0, x.dtype, out);
  CopyPlan plan;
  if (!expand_plan(x.shape, out, &plan)) return host_fallback(ctx, k_expand);
  run_plan(plan, {x.data}, {&ctx.out(0)}, dtype_size(x.dtype));
}

void c_tile(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  HostParams hp(ctx, {1});
  const std::vector<int64_t> reps = hp.ctx().ints_of(hp.ctx().in(1), "repeats");
  const Shape out = tile_shape(ctx, x, reps);
  ctx.expect_out(0, x.dtype, out);
  CopyPlan plan;
  if (!tile_plan(x.shape, reps, &plan)) return host_fallback(ctx, k_tile);
  run_plan(plan, {x.data}, {&ctx.out(0)}, dtype_size(x.dtype));
}

void c_gather(const KernelContext& ctx) {
  // The indices are data: read on the device, where one out of range is reported at the
  // step's end (cuda::sync) rather than here.
  const Tensor& x = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  if (!is_index_type(ind.dtype)) ctx.fail("indices must be i64 or i32");
  const GatherShapes g = gather_shapes(ctx, x.shape, ind);
  ctx.expect_out(0, x.dtype, g.out);
  cuda::launch_gather(x.data, ind.data, ind.dtype == DType::kInt64, ctx.out(0).data, g.outer,
                      g.count, g.inner, g.dim, static_cast<int>(dtype_size(x.dtype)),
                      cuda::context().error, stream());
}

void c_gather_grad(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& ind = ctx.in(1);
  const Tensor& dx = ctx.out(0);
  ctx.expect_dtype(dy, DType::kFloat32, "dY");
  ctx.expect_dtype(dx, DType::kFloat32, "dX");
  if (!is_index_type(ind.dtype)) ctx.fail("indices must be i64 or i32");
  const GatherShapes g = gather_shapes(ctx, dx.shape, ind);
  if (dy.shape != g.out)
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " + shape_to_string(g.out));
  if (dx.bytes()) PLANNER_CUDA_CHECK(cudaMemsetAsync(dx.data, 0, dx.bytes(), stream()));
  cuda::launch_gather_grad(dy.as<float>(), ind.data, ind.dtype == DType::kInt64, dx.as<float>(),
                           g.outer, g.count, g.inner, g.dim, cuda::context().error, stream());
}

void c_cast_like(const KernelContext& ctx) {
  cast_like(ctx, c_cast);
}

void c_cast(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& y = ctx.out(0);
  const int64_t to = ctx.attr_int("to", -1);
  if (to != static_cast<int64_t>(y.dtype))
    ctx.fail("attribute to=" + std::to_string(to) + " does not match the output type " +
             std::string(dtype_name(y.dtype)));
  ctx.expect_out_shape(0, x.shape);
  if (x.dtype == y.dtype) {
    if (x.bytes() && x.data != y.data)
      PLANNER_CUDA_CHECK(
          cudaMemcpyAsync(y.data, x.data, x.bytes(), cudaMemcpyDeviceToDevice, stream()));
    return;
  }
  const int from = static_cast<int>(x.dtype), into = static_cast<int>(y.dtype);
  if (x.dtype == DType::kFloat32 && y.dtype == DType::kFloat16)
    return cuda::launch_narrow(into, x.as<float>(), y.data, x.numel(), stream());
  if ((x.dtype == DType::kFloat16 || x.dtype == DType::kBFloat16) && y.dtype == DType::kFloat32)
    return cuda::launch_widen(from, x.data, y.as<float>(), x.numel(), stream());
  if (!cuda::launch_cast(from, into, x.data, y.data, x.numel(), stream()))
    host_fallback(ctx, k_cast);
}

// Pooling gradients: one dX element per thread (pool_math.h).
void c_pool_grad(const KernelContext& ctx) {
  PoolGeom g;
  int64_t planes = 0;
  if (!pool_grad_geometry(ctx, &g, &planes)) return host_fallback(ctx, k_pool_grad);
  for (int d = 0; d < g.nd; ++d)
    if (g.kernel[d] > kPoolMaxCandidates) return host_fallback(ctx, k_pool_grad);
  cuda::launch_pool_grad(g, planes, ctx.in(1).as<float>(), ctx.in(0).as<float>(),
                         ctx.out(0).as<float>(), stream());
}

void c_global_pool_grad(const KernelContext& ctx) {
  const GlobalPoolGrad g = global_pool_grad_shapes(ctx);
  const Tensor& dx = ctx.out(0);
  if (g.max && dx.bytes()) PLANNER_CUDA_CHECK(cudaMemsetAsync(dx.data, 0, dx.bytes(), stream()));
  cuda::launch_global_pool_grad(g.max, ctx.in(1).as<float>(), ctx.in(0).as<float>(), dx.as<float>(),
                                g.planes, g.in_p, stream());
}

}  // namespace planner::rt::kernels
