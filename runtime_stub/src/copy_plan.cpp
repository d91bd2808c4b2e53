// The copies of the data-movement kernels (copy_plan.h).
#include "copy_plan.h"

#include <algorithm>
#include <cstring>

namespace planner::rt::kernels {

namespace {

// A copy over `box` with the given strides and offsets; false beyond kCopyMaxDims.
bool add_copy(CopyPlan* plan, const Shape& box, const std::vector<int64_t>& x_strides,
              int64_t x_offset, const std::vector<int64_t>& y_strides, int64_t y_offset,
              int input = 0, int output = 0) {
  if (box.size() > static_cast<size_t>(kCopyMaxDims)) return false;
  StridedCopy c;
  c.rank = static_cast<int>(box.size());
  for (size_t d = 0; d < box.size(); ++d) {
    c.shape[d] = box[d];
    c.x_strides[d] = x_strides[d];
    c.y_strides[d] = y_strides[d];
  }
  c.x_offset = x_offset;
  c.y_offset = y_offset;
  c.input = input;
  c.output = output;
  plan->copies.push_back(c);
  return true;
}

// Constant Pad's interior: the box of X that lands in the output, where it starts in X and in
// the output (negative pads crop).
struct Interior {
  Shape box;
  int64_t x_offset = 0, y_offset = 0;
  bool empty = false;
};

Interior interior(const Shape& x, const PadSpec& p) {
  Interior in;
  const std::vector<int64_t> xs = strides_of(x), ys = strides_of(p.out);
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t xb = std::max<int64_t>(-p.begin[d], 0);
    const int64_t yb = std::max<int64_t>(p.begin[d], 0);
    const int64_t n = x[d] - xb - std::max<int64_t>(-p.end[d], 0);
    if (n <= 0) in.empty = true;
    in.box.push_back(std::max<int64_t>(n, 0));
    in.x_offset += xb * xs[d];
    in.y_offset += yb * ys[d];
  }
  return in;
}

}  // namespace

bool slice_plan(const Shape& x, const SliceRegion& r, CopyPlan* plan) {
  *plan = CopyPlan();
  int64_t base = 0;
  std::vector<int64_t> st;
  slice_strides(r, x, &base, &st);
  return add_copy(plan, r.extent, st, base, strides_of(r.extent), 0);
}

bool slice_grad_plan(const Shape& dx, const SliceRegion& r, CopyPlan* plan) {
  // The slices' elements are distinct, so each dY element lands on its own dX element.
  *plan = CopyPlan();
  plan->fill = CopyFill::kZero;
  int64_t base = 0;
  std::vector<int64_t> st;
  slice_strides(r, dx, &base, &st);
  return add_copy(plan, r.extent, strides_of(r.extent), 0, st, base);
}

bool concat_plan(const std::vector<Shape>& inputs, int64_t axis, CopyPlan* plan) {
  *plan = CopyPlan();
  if (inputs.empty()) return false;
  Shape out = inputs[0];
  const size_t a = static_cast<size_t>(axis);
  out[a] = 0;
  for (const Shape& s : inputs) out[a] += s[a];
  const std::vector<int64_t> ys = strides_of(out);
  int64_t at = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!add_copy(plan, inputs[k], strides_of(inputs[k]), 0, ys, at * ys[a], static_cast<int>(k)))
      return false;
    at += inputs[k][a];
  }
  return true;
}

bool split_plan(const Shape& x, int64_t axis, const std::vector<int64_t>& sizes, CopyPlan* plan) {
  *plan = CopyPlan();
  const size_t a = static_cast<size_t>(axis);
  const std::vector<int64_t> xs = strides_of(x);
  int64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape s = x;
    s[a] = sizes[k];
    if (!add_copy(plan, s, xs, at * xs[a], strides_of(s), 0, 0, static_cast<int>(k))) return false;
    at += sizes[k];
  }
  return true;
}

bool pad_plan(const Shape& x, const PadSpec& p, CopyPlan* plan) {
  *plan = CopyPlan();
  if (p.mode != PadMode::kConstant) return false;
  plan->fill = CopyFill::kValue;
  const Interior in = interior(x, p);
  if (in.empty) return x.size() <= static_cast<size_t>(kCopyMaxDims);
  return add_copy(plan, in.box, strides_of(x), in.x_offset, strides_of(p.out), in.y_offset);
}

bool pad_grad_plan(const Shape& dx, const PadSpec& p, CopyPlan* plan) {
  *plan = CopyPlan();
  if (p.mode != PadMode::kConstant) return false;
  plan->fill = CopyFill::kZero;
  const Interior in = interior(dx, p);
  if (in.empty) return dx.size() <= static_cast<size_t>(kCopyMaxDims);
  return add_copy(plan, in.box, strides_of(p.out), in.y_offset, strides_of(dx), in.x_offset);
}

bool expand_plan(const Shape& x, const Shape& out, CopyPlan* plan) {
  *plan = CopyPlan();
  if (x.size() > out.size()) return false;
  return add_copy(plan, out, broadcast_strides(x, out), 0, strides_of(out), 0);
}

bool tile_plan(const Shape& x, const std::vector<int64_t>& repeats, CopyPlan* plan) {
  // Output axis d as (repeat, j): X is read at j whatever the repeat.
  *plan = CopyPlan();
  Shape out, box;
  for (size_t d = 0; d < x.size(); ++d) out.push_back(x[d] * repeats[d]);
  const std::vector<int64_t> xs = strides_of(x), ys = strides_of(out);
  std::vector<int64_t> bx, by;
  for (size_t d = 0; d < x.size(); ++d) {
    box.push_back(repeats[d]);
    bx.push_back(0);
    by.push_back(x[d] * ys[d]);
    box.push_back(x[d]);
    bx.push_back(xs[d]);
    by.push_back(ys[d]);
  }
  return add_copy(plan, box, bx, 0, by, 0);
}

void run_copy_plan_on_host(const CopyPlan& plan, const std::vector<const void*>& inputs,
                           const std::vector<void*>& outputs,
                           const std::vector<int64_t>& out_counts, size_t elem,
                           const void* fill_value) {
  if (plan.fill != CopyFill::kNone && !outputs.empty()) {
    auto* y = static_cast<uint8_t*>(outputs[0]);
    for (int64_t i = 0; i < out_counts[0]; ++i) {
      if (plan.fill == CopyFill::kZero)
        std::memset(y + static_cast<size_t>(i) * elem, 0, elem);
      else
        std::memcpy(y + static_cast<size_t>(i) * elem, fill_value, elem);
    }
  }
  for (const StridedCopy& c : plan.copies) {
    const auto* x = static_cast<const uint8_t*>(inputs[static_cast<size_t>(c.input)]);
    auto* y = static_cast<uint8_t*>(outputs[static_cast<size_t>(c.output)]);
    const int64_t n = copy_count(c);
    for (int64_t i = 0; i < n; ++i) {
      int64_t xo = 0, yo = 0;
      copy_offsets(c, i, &xo, &yo);
      std::memcpy(y + yo * static_cast<int64_t>(elem), x + xo * static_cast<int64_t>(elem), elem);
    }
  }
}

}  // namespace planner::rt::kernels
