// What the data-movement kernels compute from shapes and their small parameter inputs (starts,
// pads, indices' shape), shared by the cpu kernels and the cuda ones (cuda/shape_ops_cuda.cpp),
// which read those inputs on the host and move the data on the device.
#pragma once

#include <vector>

#include "copy_math.h"
#include "kernel_util.h"
#include "loss_math.h"
#include "pool_math.h"
#include "resize_math.h"

namespace planner::rt::kernels {

/// Concat's output shape (fails on mismatched inputs); *axis gets the normalised axis.
Shape concat_shape(const KernelContext& ctx, int64_t* axis);

/// Split's piece sizes along *axis (normalised), checked against the outputs' shapes.
std::vector<int64_t> split_sizes(const KernelContext& ctx, const Tensor& x, int64_t* axis);

/// The region a Slice reads: per axis a start, a step and an extent (ONNX clamping rules).
struct SliceRegion {
  Shape start, step, extent;
};

/// Slice's region of `x` from inputs starts, ends[, axes][, steps] at `first_input` (or the
/// opset-1 attributes). Fails on inconsistent parameters.
SliceRegion slice_region(const KernelContext& ctx, const Shape& x, size_t first_input);

/// The base offset and per-axis strides with which element idx of the slice sits in `x`.
void slice_strides(const SliceRegion& r, const Shape& x, int64_t* base, std::vector<int64_t>* st);

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

struct PadSpec {
  PadMode mode = PadMode::kConstant;
  std::vector<int64_t> begin, end;  ///< per axis of X, may be negative (cropping)
  Shape out;
};

/// Pad's parameters for `x` (pads and axes from inputs when given, else attributes).
PadSpec pad_spec(const KernelContext& ctx, const Shape& x, const Tensor* pads_in,
                 const Tensor* axes_in);

/// Pad as a gather over `x` (at most kCopyMaxDims dimensions; Error beyond).
PadGeom pad_geom(const KernelContext& ctx, const PadSpec& p, const Shape& x);
/// The bits of one element of `dtype` holding `value` (f16 and bf16 rounded to nearest even).
uint64_t pad_fill_bits(DType dtype, double value);

/// Gather's geometry: data as [outer, dim, inner], `count` indices, the output shape.
struct GatherShapes {
  int64_t axis, outer, dim, inner, count;
  Shape out;
};

GatherShapes gather_shapes(const KernelContext& ctx, const Shape& data, const Tensor& indices);

/// The indices, each in [-dim, dim) (fails otherwise), made non-negative.
std::vector<int64_t> checked_indices(const KernelContext& ctx, const Tensor& indices, int64_t dim);

/// PoolGrad's checks (dY, X and the attributes, as the cpu kernel makes them) and geometry;
/// *planes gets N·C. False where the geometry exceeds PoolGeom's fixed sizes.
bool pool_grad_geometry(const KernelContext& ctx, PoolGeom* g, int64_t* planes);

/// GlobalPoolGrad's checks (dY, X, op, dX) and shape: N·C planes of in_p elements.
struct GlobalPoolGrad {
  bool max = false;  ///< GlobalMaxPool (else GlobalAveragePool)
  int64_t planes = 0, in_p = 0;
};
GlobalPoolGrad global_pool_grad_shapes(const KernelContext& ctx);

/// Tile's output shape for `repeats` (checked: one per axis, non-negative).
Shape tile_shape(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& repeats);

/// Range's output, checked: n elements start + i * delta of the inputs' type (integers in
/// int64 arithmetic, f32 as float: `fstart + float(i) * fdelta`).
struct RangeSpec {
  DType dtype = DType::kFloat32;
  int64_t n = 0;
  int64_t start = 0, delta = 1;
  float fstart = 0, fdelta = 1;
};
RangeSpec range_spec(const KernelContext& ctx);

/// ConstantOfShape's value, after checking the output against the shape input (host memory).
double constant_of_shape_value(const KernelContext& ctx);

/// ArgMax's and ArgMin's geometry: the input as [outer, extent, inner], n output elements;
/// checks the output (int64, keepdims) and the input type (f32, i32, i64).
struct ArgShapes {
  int64_t extent = 1, inner = 1, n = 0;
  bool max = true, last = false;
};
ArgShapes arg_shapes(const KernelContext& ctx);

/// Trilu's matrices (the last two dimensions) and its k (input 1, host memory) and upper.
struct TriluShapes {
  int64_t rows = 0, cols = 0, k = 0;
  bool upper = true;
};
TriluShapes trilu_shapes(const KernelContext& ctx);

/// TopK's geometry: the input as [outer, extent, inner], n = outer * inner slices, k (input 1,
/// host memory); checks the outputs (values like the input, int64 indices) and the input type
/// (f32, i32, i64).
struct TopKShapes {
  int64_t extent = 1, inner = 1, n = 0, k = 0;
  bool largest = true;
};
TopKShapes topk_shapes(const KernelContext& ctx);
/// TopKGrad's geometry (dV, indices) -> dX: dX as [outer, extent, inner] around `axis`, k from
/// dV; checks the shapes and types (f32 gradients, int64 indices).
TopKShapes topk_grad_shapes(const KernelContext& ctx);

/// CumSum's geometry: the input as [outer, extent, inner] along the axis (input 1, host
/// memory), n = outer * inner running sums; checks the output and the type (f32, i32, i64).
struct CumSumShapes {
  int64_t extent = 1, inner = 1, n = 0;
  bool exclusive = false, reverse = false;
};
CumSumShapes cumsum_shapes(const KernelContext& ctx);

/// OneHot's geometry: the output as [outer, depth, inner] (depth from input 1, host memory),
/// the indices as [outer, inner]; checks the output (values' type) and the indices' type
/// (i32, i64, f32).
struct OneHotShapes {
  int64_t depth = 0, inner = 1, n = 0;  ///< n: output elements
};
OneHotShapes one_hot_shapes(const KernelContext& ctx);

/// Resize's parameters (opset 11-17: X, roi, scales, sizes; scales and sizes in host memory),
/// checked: f32 data of rank 1 to 8, nearest/linear/cubic, a coordinate mode other than
/// tf_crop_and_resize, no antialias, one scale or size per axis, the output's shape.
ResizeParams resize_params(const KernelContext& ctx);
/// ai.planner.ResizeGrad's (dY, roi, scales, sizes) -> dX: the forward Resize's parameters for an
/// input of dX's shape, checked against dY's.
ResizeParams resize_grad_params(const KernelContext& ctx);

/// GatherElements' geometry: the data's and the indices' shapes (at most 8 dimensions), the
/// axis, n output elements; checks the ranks, the index type (i64, i32) and the output.
struct GatherElementsShapes {
  SmallShape data, idx;
  int axis = 0;
  int64_t n = 0;
};
GatherElementsShapes gather_elements_shapes(const KernelContext& ctx);
/// GatherElementsGrad's geometry (dY, indices, X) -> dX: checks dY against the indices, dX
/// against X, and that they differ only along `axis`; n = the lines of dX along the axis.
GatherElementsShapes gather_elements_grad_shapes(const KernelContext& ctx);

/// NegativeLogLikelihoodLoss's (and its gradient's) geometry: `input` (or dInput) as
/// [N, C, inner], the target's shape, the weights, reduction and ignore_index; checks them.
struct NllShapes {
  Shape target;
  int64_t n = 0, c = 0, inner = 1;
  bool weighted = false, none = false, mean = false, ignore = false;
  int64_t ignored = 0;
};
NllShapes nll_shapes(const KernelContext& ctx, const Tensor& input, const Tensor& target);
/// NLLLossGrad's (dY, target, weight?) -> dInput: nll_shapes of dInput, with dY and dInput
/// f32 and dY shaped as the forward's reduction leaves the loss. The cpu and cuda kernels both
/// check through it.
NllShapes nll_grad_shapes(const KernelContext& ctx);

}  // namespace planner::rt::kernels
