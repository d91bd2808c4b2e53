// Conv, ConvGradData, ConvGradFilter, MaxPool and AveragePool on cuDNN (legacy descriptor API).
// cuDNN takes 1-3 spatial dimensions with symmetric padding (1-D runs as 2-D with height 1);
// other geometries (asymmetric SAME padding, more spatial dimensions, pooling with dilations,
// ceil_mode or an Indices output) run the cpu kernel through the host fallback.
//
// Convolutions take f32 tensors, or f16 / bf16 ones (all of X, W, Y of one type, as cuDNN
// wants; the precision boundary casts mixed-precision operands) computed in f32 on tensor
// cores. f32 convolutions use plain FMA math unless TF32 is on (set_tf32).
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "device_kernels.h"
#include "planner_rt/precision.h"
#include "precision_kernels.h"

namespace planner::rt::kernels {

namespace {

// Whether cuDNN takes this window: 1-3 spatial dimensions, symmetric padding, int extents.
bool cudnn_window(const Window& w) {
  if (w.in.empty() || w.in.size() > 3) return false;
  for (size_t d = 0; d < w.in.size(); ++d)
    if (w.pad_begin[d] != w.pad_end[d]) return false;
  return true;
}

std::vector<int> ints(const Shape& s) {
  std::vector<int> v;
  for (int64_t d : s) {
    if (d > INT32_MAX) throw Error("tensor extent " + std::to_string(d) + " too large for cuDNN");
    v.push_back(static_cast<int>(d));
  }
  return v;
}

// Spatial values padded to at least two dimensions (1-D runs as 2-D with a leading 1).
std::vector<int> spatial(const Shape& v, int64_t lead) {
  std::vector<int> r = ints(v);
  if (r.size() == 1) r.insert(r.begin(), static_cast<int>(lead));
  return r;
}

// Owns the cuDNN descriptors of one convolution call.
struct ConvDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~ConvDescs() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

// The cuDNN type of a tensor type the convolutions take.
cudnnDataType_t cudnn_type(DType d) {
  switch (d) {
    case DType::kFloat16:
      return CUDNN_DATA_HALF;
    case DType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

// Fails unless X, W and Y (in the call's order) share a type cuDNN convolves.
DType conv_type(const KernelContext& ctx, const Tensor& a, const char* an, const Tensor& b,
                const char* bn, const Tensor& c, const char* cn) {
  const DType d = a.dtype;
  if (d != DType::kFloat32 && d != DType::kFloat16 && d != DType::kBFloat16)
    ctx.fail(std::string(an) + " has unsupported type " + std::string(dtype_name(d)));
  ctx.expect_dtype(b, d, bn);
  ctx.expect_dtype(c, d, cn);
  return d;
}

void set_tensor(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, const Shape& sp,
                cudnnDataType_t type = CUDNN_DATA_FLOAT) {
  std::vector<int> dims = {static_cast<int>(n), static_cast<int>(c)};
  for (int d : spatial(sp, 1)) dims.push_back(d);
  std::vector<int> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[static_cast<size_t>(i)] =
        strides[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  PLANNER_CUDA_CHECK(cudnnSetTensorNdDescriptor(desc, type, static_cast<int>(dims.size()),
                                                dims.data(), strides.data()));
}

// Whether a call of `dtype` may use tensor-core algorithms: 16-bit always, f32 under TF32.
bool tensor_ops(DType dtype) {
  return dtype != DType::kFloat32 || tf32_enabled();
}

void make_descs(const ConvShapes& s, DType dtype, ConvDescs* d) {
  const cudnnDataType_t type = cudnn_type(dtype);
  PLANNER_CUDA_CHECK(cudnnCreateTensorDescriptor(&d->x));
  PLANNER_CUDA_CHECK(cudnnCreateTensorDescriptor(&d->y));
  PLANNER_CUDA_CHECK(cudnnCreateFilterDescriptor(&d->w));
  PLANNER_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&d->conv));
  set_tensor(d->x, s.n, s.c, s.w.in, type);
  set_tensor(d->y, s.n, s.m, s.w.out, type);
  std::vector<int> wdims = {static_cast<int>(s.m), static_cast<int>(s.c / s.group)};
  for (int k : spatial(s.w.kernel, 1)) wdims.push_back(k);
  PLANNER_CUDA_CHECK(cudnnSetFilterNdDescriptor(d->w, type, CUDNN_TENSOR_NCHW,
                                                static_cast<int>(wdims.size()), wdims.data()));
  const std::vector<int> pads = spatial(s.w.pad_begin, 0), strides = spatial(s.w.strides, 1),
                         dil = spatial(s.w.dilations, 1);
  PLANNER_CUDA_CHECK(cudnnSetConvolutionNdDescriptor(d->conv, static_cast<int>(pads.size()),
                                                     pads.data(), strides.data(), dil.data(),
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  PLANNER_CUDA_CHECK(cudnnSetConvolutionGroupCount(d->conv, static_cast<int>(s.group)));
  // f32: plain FMA (no TF32), comparable with the cpu backend, or TF32 tensor cores when on
  // (ALLOW_CONVERSION lets cuDNN round f32 operands for them). 16-bit: tensor cores, f32
  // accumulation (the convolution's compute type above).
  const cudnnMathType_t math = dtype != DType::kFloat32 ? CUDNN_TENSOR_OP_MATH
                               : tf32_enabled()         ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                                                        : CUDNN_FMA_MATH;
  PLANNER_CUDA_CHECK(cudnnSetConvolutionMathType(d->conv, math));
}

// The first algorithm cuDNN's heuristics rank that ran, uses the math allowed (fp32 FMA unless
// `tensor_ops`) and is deterministic (the first that ran when none is); false when none.
template <typename Perf>
bool pick(const Perf* perf, int count, bool tensor_ops, Perf* chosen) {
  const Perf* any = nullptr;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (!tensor_ops && (perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
                        perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    if (perf[i].determinism == CUDNN_DETERMINISTIC) {
      *chosen = perf[i];
      return true;
    }
    if (!any) any = &perf[i];
  }
  if (!any) return false;
  *chosen = *any;
  return true;
}

}  // namespace

void c_conv(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  const DType dtype = conv_type(ctx, x, "X", w, "W", ctx.out(0), "Y");
  ConvShapes s = conv_shapes(ctx, x.shape, w.shape);
  ctx.expect_out(0, dtype, conv_out_shape(s));
  if (ctx.has_in(2)) {
    ctx.expect_dtype(ctx.in(2), DType::kFloat32, "B");
    if (ctx.in(2).shape != Shape{s.m})
      ctx.fail("B has shape " + shape_to_string(ctx.in(2).shape) + ", expected [" +
               std::to_string(s.m) + "]");
  }
  if (!cudnn_window(s.w)) return host_fallback(ctx, k_conv);
  if (ctx.out(0).numel() == 0) return;
  cuda::Context& cx = cuda::context();
  ConvDescs d;
  make_descs(s, dtype, &d);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT], chosen;
  int returned = 0;
  PLANNER_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
      cx.cudnn, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
  if (!pick(perf, returned, tensor_ops(dtype), &chosen)) return host_fallback(ctx, k_conv);
  size_t ws = 0;
  PLANNER_CUDA_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(cx.cudnn, d.x, d.w, d.conv, d.y, chosen.algo, &ws));
  void* workspace = cx.workspace.get(ws);
  const float one = 1.0f, zero = 0.0f;
  PLANNER_CUDA_CHECK(cudnnConvolutionForward(cx.cudnn, &one, d.x, x.data, d.w, w.data, d.conv,
                                             chosen.algo, workspace, ws, &zero, d.y,
                                             ctx.out(0).data));
  if (ctx.has_in(2) && dtype == DType::kFloat32)
    cuda::launch_add_channel_bias(ctx.out(0).as<float>(), ctx.in(2).as<float>(), s.n, s.m,
                                  num_elements(s.w.out), cx.stream);
  else if (ctx.has_in(2))  // a 16-bit result: the f32 bias added, rounded once more
    cuda::launch_add_channel_bias_half(static_cast<int>(dtype), ctx.out(0).data,
                                       ctx.in(2).as<float>(), s.n, s.m, num_elements(s.w.out),
                                       cx.stream);
}

void c_conv_grad_data(const KernelContext& ctx) {
  const Tensor& dy = ctx.in(0);
  const Tensor& w = ctx.in(1);
  const Tensor& dx = ctx.out(0);
  const DType dtype = conv_type(ctx, dy, "dY", w, "W", dx, "dX");
  ConvShapes s = conv_shapes(ctx, dx.shape, w.shape);
  if (dy.shape != conv_out_shape(s))
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " +
             shape_to_string(conv_out_shape(s)));
  if (!cudnn_window(s.w)) return host_fallback(ctx, k_conv_grad_data);
  cuda::Context& cx = cuda::context();
  if (dy.numel() == 0 || w.numel() == 0) {
    if (dx.bytes()) PLANNER_CUDA_CHECK(cudaMemsetAsync(dx.data, 0, dx.bytes(), cx.stream));
    return;
  }
  ConvDescs d;
  make_descs(s, dtype, &d);
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT], chosen;
  int returned = 0;
  PLANNER_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      cx.cudnn, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
  if (!pick(perf, returned, tensor_ops(dtype), &chosen))
    return host_fallback(ctx, k_conv_grad_data);
  size_t ws = 0;
  PLANNER_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(cx.cudnn, d.w, d.y, d.conv, d.x,
                                                                  chosen.algo, &ws));
  void* workspace = cx.workspace.get(ws);
  const float one = 1.0f, zero = 0.0f;
  PLANNER_CUDA_CHECK(cudnnConvolutionBackwardData(cx.cudnn, &one, d.w, w.data, d.y, dy.data, d.conv,
                                                  chosen.algo, workspace, ws, &zero, d.x, dx.data));
}

void c_conv_grad_filter(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& dy = ctx.in(1);
  const Tensor& dw = ctx.out(0);
  const DType dtype = conv_type(ctx, x, "X", dy, "dY", dw, "dW");
  ConvShapes s = conv_shapes(ctx, x.shape, dw.shape);
  if (dy.shape != conv_out_shape(s))
    ctx.fail("dY has shape " + shape_to_string(dy.shape) + ", expected " +
             shape_to_string(conv_out_shape(s)));
  if (!cudnn_window(s.w)) return host_fallback(ctx, k_conv_grad_filter);
  cuda::Context& cx = cuda::context();
  if (dy.numel() == 0 || x.numel() == 0) {
    if (dw.bytes()) PLANNER_CUDA_CHECK(cudaMemsetAsync(dw.data, 0, dw.bytes(), cx.stream));
    return;
  }
  ConvDescs d;
  make_descs(s, dtype, &d);
  cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT], chosen;
  int returned = 0;
  PLANNER_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      cx.cudnn, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf));
  if (!pick(perf, returned, tensor_ops(dtype), &chosen))
    return host_fallback(ctx, k_conv_grad_filter);
  size_t ws = 0;
  PLANNER_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(cx.cudnn, d.x, d.y, d.conv, d.w,
                                                                    chosen.algo, &ws));
  void* workspace = cx.workspace.get(ws);
  const float one = 1.0f, zero = 0.0f;
  PLANNER_CUDA_CHECK(cudnnConvolutionBackwardFilter(cx.cudnn, &one, d.x, x.data, d.y, dy.data,
                                                    d.conv, chosen.algo, workspace, ws, &zero, d.w,
                                                    dw.data));
}

void c_pool(const KernelContext& ctx) {
  const bool max = ctx.op_type == "MaxPool";
  const KernelFn cpu = max ? k_max_pool : k_average_pool;
  const Tensor& x = ctx.in(0);
  if (x.dtype != DType::kFloat32 || x.rank() < 3 || x.rank() > 5 || ctx.has_out(1) ||
      ctx.attr_int("ceil_mode", 0) != 0 || ctx.attr_int("storage_order", 0) != 0)
    return host_fallback(ctx, cpu);
  const Shape kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != x.shape.size() - 2) return host_fallback(ctx, cpu);  // cpu reports it
  const Window w = window_geometry(ctx, Shape(x.shape.begin() + 2, x.shape.end()), kernel, false);
  for (int64_t dl : w.dilations)
    if (dl != 1) return host_fallback(ctx, cpu);
  if (!cudnn_window(w)) return host_fallback(ctx, cpu);
  Shape out = {x.shape[0], x.shape[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  ctx.expect_out(0, DType::kFloat32, out);
  if (ctx.out(0).numel() == 0) return;
  cuda::Context& cx = cuda::context();
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  struct Cleanup {
    cudnnPoolingDescriptor_t& p;
    cudnnTensorDescriptor_t &x, &y;
    ~Cleanup() {
      if (p) cudnnDestroyPoolingDescriptor(p);
      if (x) cudnnDestroyTensorDescriptor(x);
      if (y) cudnnDestroyTensorDescriptor(y);
    }
  } cleanup{pool, xd, yd};
  PLANNER_CUDA_CHECK(cudnnCreatePoolingDescriptor(&pool));
  PLANNER_CUDA_CHECK(cudnnCreateTensorDescriptor(&xd));
  PLANNER_CUDA_CHECK(cudnnCreateTensorDescriptor(&yd));
  const std::vector<int> win = spatial(w.kernel, 1), pads = spatial(w.pad_begin, 0),
                         strides = spatial(w.strides, 1);
  const cudnnPoolingMode_t mode = max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                      : (ctx.attr_int("count_include_pad", 0) != 0
                                             ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
  PLANNER_CUDA_CHECK(cudnnSetPoolingNdDescriptor(pool, mode, CUDNN_PROPAGATE_NAN,
                                                 static_cast<int>(win.size()), win.data(),
                                                 pads.data(), strides.data()));
  set_tensor(xd, x.shape[0], x.shape[1], w.in);
  set_tensor(yd, x.shape[0], x.shape[1], w.out);
  // cuDNN's own output extents must be the ones the cpu rule gives.
  std::vector<int> dims(win.size() + 2);
  PLANNER_CUDA_CHECK(
      cudnnGetPoolingNdForwardOutputDim(pool, xd, static_cast<int>(dims.size()), dims.data()));
  std::vector<int> want = {static_cast<int>(x.shape[0]), static_cast<int>(x.shape[1])};
  for (int o : spatial(w.out, 1)) want.push_back(o);
  if (dims != want) return host_fallback(ctx, cpu);
  const float one = 1.0f, zero = 0.0f;
  PLANNER_CUDA_CHECK(
      cudnnPoolingForward(cx.cudnn, pool, &one, xd, x.data, &zero, yd, ctx.out(0).data));
}

}  // namespace planner::rt::kernels
