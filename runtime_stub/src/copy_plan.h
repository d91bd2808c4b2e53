// Data movement as strided copies: Slice, Concat, Split, constant Pad, Expand, Tile and the
// gradients SliceGrad and PadGrad become a few copies, each "for every index i of a box,
// y[y_offset + i·y_strides] = x[x_offset + i·x_strides]", planned on the host from shapes. The
// cuda backend runs each copy as one kernel (cuda/shape_ops.cu) with the index arithmetic of
// copy_math.h; the cpu backend runs the same plans with the same arithmetic
// (run_copy_plan_on_host), and tests/runtime/copy_plan_test.cpp checks them against the
// operators' definitions, so the device's index logic is checked without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "copy_math.h"
#include "shape_ops.h"

namespace planner::rt::kernels {

/// What a kernel does to its outputs before its copies.
enum class CopyFill { kNone, kZero, kValue };

/// A kernel's data movement: an optional fill of output 0, then copies.
struct CopyPlan {
  CopyFill fill = CopyFill::kNone;
  std::vector<StridedCopy> copies;
};

/// The plans of the operators (false: an operand's rank exceeds kCopyMaxDims, or a mode the
/// copies cannot express; the caller runs the kernel another way). Shapes and parameters are
/// those the cpu kernels check; these do not check them again.
bool slice_plan(const Shape& x, const SliceRegion& r, CopyPlan* plan);
bool slice_grad_plan(const Shape& dx, const SliceRegion& r, CopyPlan* plan);
bool concat_plan(const std::vector<Shape>& inputs, int64_t axis, CopyPlan* plan);
bool split_plan(const Shape& x, int64_t axis, const std::vector<int64_t>& sizes, CopyPlan* plan);
bool pad_plan(const Shape& x, const PadSpec& p, CopyPlan* plan);        ///< constant mode only
bool pad_grad_plan(const Shape& dx, const PadSpec& p, CopyPlan* plan);  ///< constant mode only
bool expand_plan(const Shape& x, const Shape& out, CopyPlan* plan);
bool tile_plan(const Shape& x, const std::vector<int64_t>& repeats, CopyPlan* plan);

/// Runs `plan` on host memory with elements of `elem` bytes; `fill_value` holds one element for
/// CopyFill::kValue. The reference of the device kernels in tests.
void run_copy_plan_on_host(const CopyPlan& plan, const std::vector<const void*>& inputs,
                           const std::vector<void*>& outputs,
                           const std::vector<int64_t>& out_counts, size_t elem,
                           const void* fill_value = nullptr);

}  // namespace planner::rt::kernels
