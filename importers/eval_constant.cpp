// Constant evaluation kernels: index mapping for data movement, int64/double for arithmetic.
#include "importers/eval_constant.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <string_view>

#include "support/saturate.h"

namespace planner::importers {
namespace {

using Dims = std::vector<int64_t>;
using Result = Expected<std::optional<std::vector<ir::Tensor>>>;

int64_t count(const Dims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

Dims strides_of(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

ir::Tensor empty_like(ir::DType dtype, const Dims& shape) {
  ir::Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.role = ir::TensorRole::kConstant;
  t.data.assign(static_cast<size_t>(count(shape) * ir::dtype_size(dtype)), 0);
  return t;
}

// Output element i takes input element map(i): the one kernel behind every data-movement op.
std::optional<ir::Tensor> gather_elements(const ir::Tensor& in, const Dims& out_shape,
                                          const std::function<int64_t(const Dims&)>& map) {
  ir::Tensor out = empty_like(in.dtype, out_shape);
  size_t es = static_cast<size_t>(ir::dtype_size(in.dtype));
  int64_t n = count(out_shape);
  // A source index outside the values (operands whose values disagree with their shapes or a
  // declared output shape that disagrees with them) leaves the node unfolded.
  const int64_t have = static_cast<int64_t>(in.data.size() / es);
  Dims idx(out_shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = map(idx);
    if (src < 0 || src >= have) return std::nullopt;
    std::memcpy(out.data.data() + static_cast<size_t>(i) * es,
                in.data.data() + static_cast<size_t>(src) * es, es);
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < out_shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

// Linear offset into `shape` of output index `idx` under numpy broadcasting (shape right-aligned).
int64_t broadcast_offset(const Dims& idx, const Dims& shape, const Dims& strides) {
  int64_t off = 0;
  size_t shift = idx.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] != 1) off += idx[k + shift] * strides[k];
  return off;
}

bool is_int_type(ir::DType t) {
  return !ir::is_floating(t) && t != ir::DType::kString;
}
bool arithmetic_ok(ir::DType t) {
  return t != ir::DType::kString && t != ir::DType::kFloat16 && t != ir::DType::kBFloat16;
}

template <typename T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// A double as a float, overflowing to an infinity as IEEE rounding does (a plain conversion
// of a value beyond float's range is undefined behaviour).
float narrow_float(double v) {
  if (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max())
    return v > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

// Writes `v` as element i of `t`, converting to its dtype.
void put(ir::Tensor& t, int64_t i, double v, int64_t iv, bool from_int) {
  uint8_t* p = t.data.data() + i * ir::dtype_size(t.dtype);
  auto as_int = [&]() { return from_int ? iv : saturating_int64(v); };
  switch (t.dtype) {
    case ir::DType::kFloat32:
      store<float>(p, from_int ? static_cast<float>(iv) : narrow_float(v));
      break;
    case ir::DType::kFloat64:
      store<double>(p, from_int ? static_cast<double>(iv) : v);
      break;
    case ir::DType::kInt8:
      store<int8_t>(p, static_cast<int8_t>(as_int()));
      break;
    case ir::DType::kUInt8:
      store<uint8_t>(p, static_cast<uint8_t>(as_int()));
      break;
    case ir::DType::kInt16:
      store<int16_t>(p, static_cast<int16_t>(as_int()));
      break;
    case ir::DType::kUInt16:
      store<uint16_t>(p, static_cast<uint16_t>(as_int()));
      break;
    case ir::DType::kInt32:
      store<int32_t>(p, static_cast<int32_t>(as_int()));
      break;
    case ir::DType::kUInt32:
      store<uint32_t>(p, static_cast<uint32_t>(as_int()));
      break;
    case ir::DType::kInt64:
      store<int64_t>(p, as_int());
      break;
    case ir::DType::kUInt64:
      store<uint64_t>(p, static_cast<uint64_t>(as_int()));
      break;
    case ir::DType::kBool:
      store<uint8_t>(p, from_int ? (iv != 0) : (v != 0.0));
      break;
    default:
      break;
  }
}

// Values of a tensor in the arithmetic domain its dtype belongs to.
struct Values {
  bool is_int = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  static Values of(const ir::Tensor& t) {
    Values v;
    v.is_int = is_int_type(t.dtype);
    if (t.num_elements() == 0) return v;
    if (v.is_int)
      v.ints = t.int_values();
    else
      v.floats = t.float_values();
    return v;
  }
};

Result one(ir::Tensor t) {
  return std::optional<std::vector<ir::Tensor>>(std::vector<ir::Tensor>{std::move(t)});
}
Result cannot() {
  return std::optional<std::vector<ir::Tensor>>();
}

Result one(std::optional<ir::Tensor> t) {
  return t ? one(std::move(*t)) : cannot();
}

Result eval_constant_node(const ir::Op& op) {
  const ir::Attribute* a = nullptr;
  for (const auto& [key, attr] : op.attributes)
    if (key.rfind("value", 0) == 0) a = &attr;
  if (!a) return make_error("Constant has no value attribute");
  ir::Tensor t;
  t.role = ir::TensorRole::kConstant;
  if (a->is_tensor()) {
    const auto& src = std::get<std::shared_ptr<const ir::Tensor>>(a->value);
    t.dtype = src->dtype;
    t.shape = src->shape;
    t.data = src->data;
    t.external = src->external;
    bool empty = std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d == 0; });
    if (src->external || (t.dtype != ir::DType::kString && !t.has_data() && !empty))
      return cannot();
    return one(std::move(t));
  }
  if (a->is_float() || a->is_int()) {
    t.dtype = a->is_float() ? ir::DType::kFloat32 : ir::DType::kInt64;
    t = empty_like(t.dtype, {});
    put(t, 0, a->is_float() ? std::get<double>(a->value) : 0.0,
        a->is_int() ? std::get<int64_t>(a->value) : 0, a->is_int());
    return one(std::move(t));
  }
  if (a->is_floats()) {
    const auto& v = std::get<std::vector<double>>(a->value);
    t = empty_like(ir::DType::kFloat32, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) put(t, static_cast<int64_t>(i), v[i], 0, false);
    return one(std::move(t));
  }
  if (a->is_ints()) {
    const auto& v = std::get<std::vector<int64_t>>(a->value);
    t = empty_like(ir::DType::kInt64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) put(t, static_cast<int64_t>(i), 0, v[i], true);
    return one(std::move(t));
  }
  // Strings: the shape is known, the values are not representable in the IR's byte form.
  t.dtype = ir::DType::kString;
  if (std::holds_alternative<std::vector<std::string>>(a->value))
    t.shape = {static_cast<int64_t>(std::get<std::vector<std::string>>(a->value).size())};
  return one(std::move(t));
}

Result eval_elementwise(const ir::Op& op, std::span<const ir::Tensor* const> in,
                        const PartialType& out_type) {
  const std::string& type = op.op_type;
  for (const ir::Tensor* t : in)
    if (!t || !arithmetic_ok(t->dtype)) return cannot();
  ir::DType out_dtype = *out_type.dtype;
  if (!arithmetic_ok(out_dtype)) return cannot();
  const Dims& shape = *out_type.dims;
  // Every operand must broadcast to the output (right-aligned, each extent equal or 1): a
  // model whose declared output disagrees is left unfolded, never indexed out of range.
  for (const ir::Tensor* t : in) {
    if (t->shape.size() > shape.size()) return cannot();
    size_t shift = shape.size() - t->shape.size();
    for (size_t k = 0; k < t->shape.size(); ++k)
      if (t->shape[k] != 1 && t->shape[k] != shape[k + shift]) return cannot();
  }
  ir::Tensor out = empty_like(out_dtype, shape);
  std::vector<Values> vals;
  std::vector<Dims> strides;
  for (const ir::Tensor* t : in) {
    vals.push_back(Values::of(*t));
    strides.push_back(strides_of(t->shape));
  }
  // Integer arithmetic when every numeric operand is an integer (Where's condition aside).
  size_t first_value = type == "Where" ? 1 : 0;
  bool int_math = true;
  for (size_t i = first_value; i < in.size(); ++i) int_math = int_math && vals[i].is_int;
  int64_t fmod = op.int_attr("fmod", 0);

  int64_t n = count(shape);
  Dims idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    auto off = [&](size_t i) {
      return static_cast<size_t>(broadcast_offset(idx, in[i]->shape, strides[i]));
    };
    auto iv = [&](size_t i) {
      return vals[i].is_int ? vals[i].ints[off(i)] : saturating_int64(vals[i].floats[off(i)]);
    };
    auto fv = [&](size_t i) {
      return vals[i].is_int ? static_cast<double>(vals[i].ints[off(i)]) : vals[i].floats[off(i)];
    };
    if (type == "Where") {
      size_t pick = iv(0) != 0 ? 1 : 2;
      if (int_math)
        put(out, e, 0, iv(pick), true);
      else
        put(out, e, fv(pick), 0, false);
    } else if (in.size() == 1) {
      if (int_math) {
        int64_t x = iv(0), r = 0;
        // -INT64_MIN wraps to itself, as on the device (negation would overflow in C++).
        const int64_t neg = static_cast<int64_t>(0 - static_cast<uint64_t>(x));
        if (type == "Neg")
          r = neg;
        else if (type == "Abs")
          r = x < 0 ? neg : x;
        else if (type == "Not")
          r = x == 0;
        else if (type == "Sign")
          r = (x > 0) - (x < 0);
        else if (type == "Identity" || type == "Floor" || type == "Ceil" || type == "Round")
          r = x;
        else if (type == "Relu")
          r = std::max<int64_t>(x, 0);
        else
          return cannot();
        put(out, e, 0, r, true);
      } else {
        double x = fv(0), r = 0;
        if (type == "Neg")
          r = -x;
        else if (type == "Abs")
          r = std::fabs(x);
        else if (type == "Sqrt")
          r = std::sqrt(x);
        else if (type == "Floor")
          r = std::floor(x);
        else if (type == "Ceil")
          r = std::ceil(x);
        else if (type == "Round")
          r = std::nearbyint(x);
        else if (type == "Reciprocal")
          r = 1.0 / x;
        else if (type == "Exp")
          r = std::exp(x);
        else if (type == "Log")
          r = std::log(x);
        else if (type == "Sign")
          r = (x > 0) - (x < 0);
        else if (type == "Relu")
          r = std::max(x, 0.0);
        else if (type == "Not")
          r = x == 0.0;
        else if (type == "Identity")
          r = x;
        else
          return cannot();
        put(out, e, r, 0, false);
      }
    } else {
      // Variadic Max/Min/Sum fold left to right; binary ops have exactly two operands.
      if (int_math) {
        int64_t acc = iv(0);
        for (size_t i = 1; i < in.size(); ++i) {
          int64_t b = iv(i);
          // Wrap-around, as int64 arithmetic on the device does (signed overflow is undefined
          // behaviour in C++; a saturated float cast feeds INT64_MAX here).
          auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
          if (type == "Add" || type == "Sum")
            acc = wrap(static_cast<uint64_t>(acc) + static_cast<uint64_t>(b));
          else if (type == "Sub")
            acc = wrap(static_cast<uint64_t>(acc) - static_cast<uint64_t>(b));
          else if (type == "Mul")
            acc = wrap(static_cast<uint64_t>(acc) * static_cast<uint64_t>(b));
          else if (type == "Div" || type == "Mod") {
            if (b == 0) return make_error("integer division by zero in constant {}", type);
            if (b == -1) {  // INT64_MIN / -1 traps; the wrapped result is what int64 gives
              acc = type == "Div" ? static_cast<int64_t>(0 - static_cast<uint64_t>(acc)) : 0;
            } else if (type == "Div")
              acc /= b;
            else {
              int64_t r = acc % b;
              if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
              acc = r;
            }
          } else if (type == "Pow") {
            // Square-and-multiply with wrap-around: bounded time whatever the exponent.
            uint64_t r = 1, base = static_cast<uint64_t>(acc);
            for (int64_t k = b; k > 0; k >>= 1, base *= base)
              if (k & 1) r *= base;
            acc = b < 0 ? 0 : static_cast<int64_t>(r);
          } else if (type == "Max")
            acc = std::max(acc, b);
          else if (type == "Min")
            acc = std::min(acc, b);
          else if (type == "Equal")
            acc = acc == b;
          else if (type == "Less")
            acc = acc < b;
          else if (type == "Greater")
            acc = acc > b;
          else if (type == "LessOrEqual")
            acc = acc <= b;
          else if (type == "GreaterOrEqual")
            acc = acc >= b;
          else if (type == "And")
            acc = (acc != 0) && (b != 0);
          else if (type == "Or")
            acc = (acc != 0) || (b != 0);
          else if (type == "Xor")
            acc = (acc != 0) != (b != 0);
          else
            return cannot();
        }
        put(out, e, 0, acc, true);
      } else {
        double acc = fv(0);
        for (size_t i = 1; i < in.size(); ++i) {
          double b = fv(i);
          if (type == "Add" || type == "Sum")
            acc += b;
          else if (type == "Sub")
            acc -= b;
          else if (type == "Mul")
            acc *= b;
          else if (type == "Div")
            acc /= b;
          else if (type == "Mod")
            acc = std::fmod(acc, b);
          else if (type == "Pow")
            acc = std::pow(acc, b);
          else if (type == "Max")
            acc = std::max(acc, b);
          else if (type == "Min")
            acc = std::min(acc, b);
          else if (type == "Equal")
            acc = acc == b;
          else if (type == "Less")
            acc = acc < b;
          else if (type == "Greater")
            acc = acc > b;
          else if (type == "LessOrEqual")
            acc = acc <= b;
          else if (type == "GreaterOrEqual")
            acc = acc >= b;
          else
            return cannot();
        }
        put(out, e, acc, 0, false);
      }
    }
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return one(std::move(out));
}

Result eval_cast(const ir::Tensor& in, const PartialType& out_type) {
  ir::DType to = *out_type.dtype;
  if (to == in.dtype) {
    ir::Tensor t = in;
    t.role = ir::TensorRole::kConstant;
    return one(std::move(t));
  }
  if (!arithmetic_ok(to) || !arithmetic_ok(in.dtype)) return cannot();
  ir::Tensor out = empty_like(to, in.shape);
  Values v = Values::of(in);
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    if (v.is_int)
      put(out, i, 0, v.ints[static_cast<size_t>(i)], true);
    else
      put(out, i, v.floats[static_cast<size_t>(i)], 0, false);
  }
  return one(std::move(out));
}

Result eval_gather(const ir::Op& op, const ir::Tensor& data, const ir::Tensor& indices,
                   const Dims& out_shape) {
  size_t r = data.shape.size();
  int64_t axis = op.int_attr("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(r);
  if (axis < 0 || axis >= static_cast<int64_t>(r)) return cannot();
  std::vector<int64_t> idx = indices.num_elements() ? indices.int_values() : std::vector<int64_t>{};
  // The output must be the gather of these operands (a declared shape that disagrees, or
  // values shorter than their shape, leave the node unfolded rather than read out of range).
  Dims expect(data.shape.begin(), data.shape.begin() + axis);
  expect.insert(expect.end(), indices.shape.begin(), indices.shape.end());
  expect.insert(expect.end(), data.shape.begin() + axis + 1, data.shape.end());
  if (expect != out_shape || static_cast<int64_t>(idx.size()) != indices.num_elements() ||
      static_cast<int64_t>(data.data.size()) != data.num_elements() * ir::dtype_size(data.dtype))
    return cannot();
  int64_t extent = data.shape[static_cast<size_t>(axis)];
  for (int64_t& i : idx) {
    if (i < -extent || i >= extent)
      return make_error("Gather index {} is out of range for axis {} of extent {}", i, axis,
                        extent);
    if (i < 0) i += extent;
  }
  Dims ds = strides_of(data.shape), is = strides_of(indices.shape);
  size_t q = indices.shape.size();
  return one(gather_elements(data, out_shape, [&](const Dims& o) {
    int64_t off = 0;
    for (size_t k = 0; k < static_cast<size_t>(axis); ++k) off += o[k] * ds[k];
    int64_t li = 0;
    for (size_t k = 0; k < q; ++k) li += o[static_cast<size_t>(axis) + k] * is[k];
    off += idx[static_cast<size_t>(li)] * ds[static_cast<size_t>(axis)];
    for (size_t k = static_cast<size_t>(axis) + 1; k < r; ++k) off += o[k + q - 1] * ds[k];
    return off;
  }));
}

Result eval_concat(const ir::Op& op, std::span<const ir::Tensor* const> in, const Dims& out_shape) {
  int64_t axis = op.int_attr("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(out_shape.size());
  size_t a = static_cast<size_t>(axis);
  std::vector<const ir::Tensor*> parts;
  for (const ir::Tensor* t : in)
    if (t && t->num_elements() > 0) parts.push_back(t);
  if (parts.empty())
    return one(empty_like(
        *[&] {
          for (const ir::Tensor* t : in)
            if (t) return std::optional<ir::DType>(t->dtype);
          return std::optional<ir::DType>(ir::DType::kFloat32);
        }(),
        out_shape));
  ir::Tensor out = empty_like(parts[0]->dtype, out_shape);
  size_t es = static_cast<size_t>(ir::dtype_size(out.dtype));
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < a; ++k) outer *= out_shape[k];
  for (size_t k = a + 1; k < out_shape.size(); ++k) inner *= out_shape[k];
  size_t pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const ir::Tensor* t : parts) {
      size_t block = static_cast<size_t>(t->shape[a] * inner) * es;
      std::memcpy(out.data.data() + pos, t->data.data() + static_cast<size_t>(o) * block, block);
      pos += block;
    }
  }
  return one(std::move(out));
}

// Per-axis start and step of a Slice whose output shape is known (same clamping as the rule).
Result eval_slice(const ir::Op& op, std::span<const ir::Tensor* const> in, const Dims& out_shape) {
  const ir::Tensor& x = *in[0];
  Dims starts, axes, steps;
  auto ints = [&](size_t i) { return i < in.size() && in[i] ? in[i]->int_values() : Dims{}; };
  if (op.attribute("starts")) {
    starts = op.ints_attr("starts");
    axes = op.ints_attr("axes");
  } else {
    starts = ints(1);
    axes = ints(3);
    steps = ints(4);
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  size_t r = x.shape.size();
  Dims begin(r, 0), step(r, 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(r) : axes[i];
    int64_t dim = x.shape[static_cast<size_t>(a)], s = starts[i];
    if (dim == 0) continue;  // the output is empty along this axis
    if (s < 0) s += dim;
    s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    begin[static_cast<size_t>(a)] = s;
    step[static_cast<size_t>(a)] = steps[i];
  }
  Dims xs = strides_of(x.shape);
  return one(gather_elements(x, out_shape, [&](const Dims& o) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += (begin[k] + o[k] * step[k]) * xs[k];
    return off;
  }));
}

Result eval_transpose(const ir::Op& op, const ir::Tensor& x, const Dims& out_shape) {
  Dims perm = op.ints_attr("perm");
  if (perm.empty())
    for (size_t i = x.shape.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  Dims xs = strides_of(x.shape);
  return one(gather_elements(x, out_shape, [&](const Dims& o) {
    int64_t off = 0;
    for (size_t k = 0; k < perm.size(); ++k) off += o[k] * xs[static_cast<size_t>(perm[k])];
    return off;
  }));
}

Result eval_expand_or_tile(const ir::Op& op, const ir::Tensor& x, const Dims& out_shape) {
  Dims xs = strides_of(x.shape);
  bool tile = op.op_type == "Tile";
  return one(gather_elements(x, out_shape, [&](const Dims& o) {
    if (tile) {
      int64_t off = 0;
      for (size_t k = 0; k < o.size(); ++k) off += (o[k] % x.shape[k]) * xs[k];
      return off;
    }
    return broadcast_offset(o, x.shape, xs);
  }));
}

Result eval_split(const ir::Op& op, const ir::Tensor& x, std::span<const PartialType> outputs) {
  int64_t axis = op.int_attr("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
  Dims xs = strides_of(x.shape);
  std::vector<ir::Tensor> outs;
  int64_t start = 0;
  for (const PartialType& o : outputs) {
    if (!o.dims) return cannot();
    auto part = gather_elements(x, *o.dims, [&](const Dims& idx) {
      int64_t off = 0;
      for (size_t k = 0; k < idx.size() && k < xs.size(); ++k)
        off += (idx[k] + (k == static_cast<size_t>(axis) ? start : 0)) * xs[k];
      return off;
    });
    if (!part) return cannot();
    outs.push_back(std::move(*part));
    start += (*o.dims)[static_cast<size_t>(axis)];
  }
  return std::optional<std::vector<ir::Tensor>>(std::move(outs));
}

// ScatterND without reduction: data with the slices `indices` name replaced by `updates`
// (HF's Swin builds its shifted-window mask this way: img_mask[:, h, w, :] = count).
Result eval_scatter_nd(const ir::Op& op, const ir::Tensor& data, const ir::Tensor& indices,
                       const ir::Tensor& updates, const Dims& out_shape) {
  if (op.string_attr("reduction", "none") != "none" || out_shape != data.shape ||
      indices.shape.empty() || updates.dtype != data.dtype)
    return cannot();
  const size_t k = static_cast<size_t>(indices.shape.back());
  const size_t es = static_cast<size_t>(ir::dtype_size(data.dtype));
  if (k > data.shape.size() || data.data.size() != static_cast<size_t>(data.num_elements()) * es ||
      updates.data.size() != static_cast<size_t>(updates.num_elements()) * es)
    return cannot();
  Dims want(indices.shape.begin(), indices.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(k), data.shape.end());
  if (want != updates.shape) return cannot();
  int64_t slice = 1;
  for (size_t d = k; d < data.shape.size(); ++d) slice *= data.shape[d];
  const Dims ds = strides_of(data.shape);
  const std::vector<int64_t> idx = indices.num_elements() ? indices.int_values() : Dims{};
  ir::Tensor t = data;
  t.role = ir::TensorRole::kConstant;
  t.external.reset();
  int64_t count = 1;  // index tuples: the product of indices' leading dimensions
  for (size_t d = 0; d + 1 < indices.shape.size(); ++d) count *= indices.shape[d];
  if (static_cast<int64_t>(idx.size()) != count * static_cast<int64_t>(k)) return cannot();
  for (size_t u = 0; u < static_cast<size_t>(count); ++u) {
    int64_t off = 0;
    for (size_t j = 0; j < k; ++j) {
      int64_t i = idx[u * k + j];
      const int64_t extent = data.shape[j];
      if (i < -extent || i >= extent)
        return make_error("ScatterND index {} is out of range for axis {} of extent {}", i, j,
                          extent);
      off += (i < 0 ? i + extent : i) * ds[j];
    }
    std::memcpy(t.data.data() + static_cast<size_t>(off) * es,
                updates.data.data() + u * static_cast<size_t>(slice) * es,
                static_cast<size_t>(slice) * es);
  }
  return one(std::move(t));
}

Result eval_range(const ir::Tensor& start, const ir::Tensor& delta, const PartialType& out) {
  ir::Tensor t = empty_like(*out.dtype, *out.dims);
  int64_t n = (*out.dims)[0];
  if (is_int_type(start.dtype)) {
    int64_t s = start.int_values()[0], d = delta.int_values()[0];
    // Wrapping arithmetic: a hostile start or delta must not overflow (undefined behaviour).
    for (int64_t i = 0; i < n; ++i)
      put(t, i, 0,
          static_cast<int64_t>(static_cast<uint64_t>(s) +
                               static_cast<uint64_t>(i) * static_cast<uint64_t>(d)),
          true);
  } else {
    double s = start.float_values()[0], d = delta.float_values()[0];
    for (int64_t i = 0; i < n; ++i) put(t, i, s + static_cast<double>(i) * d, 0, false);
  }
  return one(std::move(t));
}

Result eval_constant_of_shape(const ir::Op& op, const PartialType& out) {
  ir::Tensor t = empty_like(*out.dtype, *out.dims);
  if (const ir::Attribute* a = op.attribute("value"); a && a->is_tensor()) {
    const auto& v = std::get<std::shared_ptr<const ir::Tensor>>(a->value);
    if (!v->has_data() || v->dtype == ir::DType::kString) return cannot();
    size_t es = static_cast<size_t>(ir::dtype_size(v->dtype));
    for (size_t i = 0; i + es <= t.data.size(); i += es)
      std::memcpy(t.data.data() + i, v->data.data(), es);
  }
  return one(std::move(t));
}

bool in_set(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

}  // namespace

bool needs_only_shapes(const ir::Op& op) {
  return (op.domain.empty() || op.domain == "ai.onnx") &&
         (op.op_type == "Shape" || op.op_type == "Size");
}

Expected<std::optional<std::vector<ir::Tensor>>> evaluate_constant(
    const ir::Op& op, std::span<const ir::Tensor* const> in, std::span<const PartialType> outputs) {
  if (!op.domain.empty() && op.domain != "ai.onnx") return cannot();
  const std::string& type = op.op_type;
  if (type == "Constant") return eval_constant_node(op);
  for (const PartialType& o : outputs)
    if (!o.is_static() || !o.dtype) return cannot();
  if (outputs.empty() || in.empty() || !in[0]) return cannot();
  const ir::Tensor& x = *in[0];
  const Dims& shape = *outputs[0].dims;

  if (type == "Shape" || type == "Size") {
    Dims dims = x.shape;
    if (type == "Size") {
      ir::Tensor t = empty_like(ir::DType::kInt64, {});
      put(t, 0, 0, x.num_elements(), true);
      return one(std::move(t));
    }
    int64_t r = static_cast<int64_t>(dims.size());
    int64_t start = op.int_attr("start", 0), end = op.int_attr("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    ir::Tensor t = empty_like(ir::DType::kInt64, shape);
    for (int64_t i = start; i < end; ++i) put(t, i - start, 0, dims[static_cast<size_t>(i)], true);
    return one(std::move(t));
  }
  for (const ir::Tensor* t : in)
    if (t && !t->has_data() && t->num_elements() > 0) return cannot();

  if (in_set(type, {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})) {
    ir::Tensor t = x;
    t.shape = shape;
    t.role = ir::TensorRole::kConstant;
    t.external.reset();
    return one(std::move(t));
  }
  if (type == "Cast" || type == "CastLike") return eval_cast(x, outputs[0]);
  if (type == "Gather" && in.size() > 1 && in[1]) return eval_gather(op, x, *in[1], shape);
  if (type == "Concat") return eval_concat(op, in, shape);
  if (type == "Slice") return eval_slice(op, in, shape);
  if (type == "Transpose") return eval_transpose(op, x, shape);
  if (type == "Expand" || type == "Tile") return eval_expand_or_tile(op, x, shape);
  if (type == "Split") return eval_split(op, x, outputs);
  if (type == "ScatterND" && in.size() == 3 && in[1] && in[2])
    return eval_scatter_nd(op, x, *in[1], *in[2], shape);
  if (type == "ConstantOfShape") return eval_constant_of_shape(op, outputs[0]);
  if (type == "Range" && in.size() == 3 && in[2]) return eval_range(x, *in[2], outputs[0]);
  if (in_set(type,
             {"Add",   "Sub",  "Mul",   "Div",        "Mod",     "Pow",         "Max",
              "Min",   "Sum",  "Equal", "Less",       "Greater", "LessOrEqual", "GreaterOrEqual",
              "And",   "Or",   "Xor",   "Where",      "Neg",     "Abs",         "Sqrt",
              "Floor", "Ceil", "Round", "Reciprocal", "Exp",     "Log",         "Sign",
              "Relu",  "Not"})) {
    std::vector<const ir::Tensor*> present;
    for (const ir::Tensor* t : in)
      if (t) present.push_back(t);
    return eval_elementwise(op, present, outputs[0]);
  }
  return cannot();
}

}  // namespace planner::importers
