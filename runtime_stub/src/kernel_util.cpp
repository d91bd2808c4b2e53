// Kernel call context, checks, broadcasting and the BLAS binding.
#include "kernel_util.h"

#include <algorithm>

// The Fortran BLAS interface: every BLAS that find_package(BLAS) finds exports it, so no
// header (cblas.h differs between vendors) is needed.
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c, const int* ldc);

namespace planner::rt::kernels {

void KernelContext::fail(const std::string& what) const {
  std::string where = node.empty()
                          ? std::string(op_type)
                          : "node '" + std::string(node) + "' (" + std::string(op_type) + ")";
  throw Error(where + ": " + what);
}

const Tensor& KernelContext::in(size_t i) const {
  if (!has_in(i)) fail("required input " + std::to_string(i) + " is missing");
  return inputs[i];
}

const Tensor& KernelContext::out(size_t i) const {
  if (!has_out(i)) fail("required output " + std::to_string(i) + " is missing");
  return outputs[i];
}

int64_t KernelContext::attr_int(const std::string& name, int64_t fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  fail("attribute '" + name + "' must be an int");
}

double KernelContext::attr_float(const std::string& name, double fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  fail("attribute '" + name + "' must be a float");
}

std::string KernelContext::attr_string(const std::string& name, const std::string& fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  fail("attribute '" + name + "' must be a string");
}

std::vector<int64_t> KernelContext::attr_ints(const std::string& name,
                                              std::vector<int64_t> fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return {*v};
  // An empty list may arrive typed as any list kind.
  if (auto* v = std::get_if<std::vector<double>>(&it->second); v && v->empty()) return {};
  fail("attribute '" + name + "' must be a list of ints");
}

void KernelContext::expect_dtype(const Tensor& t, DType d, const std::string& what) const {
  if (t.dtype != d)
    fail(what + " has type " + std::string(dtype_name(t.dtype)) + ", expected " +
         std::string(dtype_name(d)));
}

void KernelContext::expect_arity(size_t n_in, size_t n_out, const std::string& signature) const {
  size_t last_in = inputs.size(), last_out = outputs.size();
  while (last_in > 0 && !inputs[last_in - 1].present()) --last_in;
  while (last_out > 0 && !outputs[last_out - 1].present()) --last_out;
  if (last_in > n_in || last_out > n_out)
    fail("got " + std::to_string(last_in) + " inputs and " + std::to_string(last_out) +
         " outputs, expected " + signature);
}

void KernelContext::expect_out_shape(size_t i, const Shape& shape) const {
  const Tensor& o = out(i);
  if (o.shape != shape)
    fail("output " + std::to_string(i) + " has shape " + shape_to_string(o.shape) + ", expected " +
         shape_to_string(shape));
}

void KernelContext::expect_out(size_t i, DType d, const Shape& shape) const {
  expect_dtype(out(i), d, "output " + std::to_string(i));
  expect_out_shape(i, shape);
}

std::vector<int64_t> KernelContext::ints_of(const Tensor& t, const std::string& what) const {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype == DType::kInt64) {
    if (!v.empty()) std::memcpy(v.data(), t.data, v.size() * 8);
  } else if (t.dtype == DType::kInt32) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<const int32_t*>(t.data)[i];
  } else {
    fail(what + " must be i64 or i32, not " + std::string(dtype_name(t.dtype)));
  }
  return v;
}

int64_t KernelContext::norm_axis(int64_t axis, int64_t rank) const {
  if (axis < -rank || axis >= rank)
    fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Shape KernelContext::broadcast(const std::vector<Shape>& shapes) const {
  size_t r = 0;
  for (const Shape& s : shapes) r = std::max(r, s.size());
  Shape out(r, 1);
  for (const Shape& s : shapes) {
    size_t lead = r - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[lead + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o == 1) {
        o = s[i];
        continue;
      }
      std::string list;
      for (const Shape& t : shapes) list += (list.empty() ? "" : " and ") + shape_to_string(t);
      fail("shapes " + list + " cannot be broadcast");
    }
  }
  return out;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    st[static_cast<size_t>(i)] = st[static_cast<size_t>(i) + 1] * shape[static_cast<size_t>(i) + 1];
  return st;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> own = strides_of(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[lead + i] = in[i] == 1 ? 0 : own[i];
  return st;
}

double load_as_double(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kFloat32:
      return static_cast<const float*>(t.data)[i];
    case DType::kInt32:
      return static_cast<const int32_t*>(t.data)[i];
    case DType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(t.data)[i]);
    case DType::kUInt8:
      return static_cast<const uint8_t*>(t.data)[i];
    case DType::kBool:
      return static_cast<const bool*>(t.data)[i] ? 1.0 : 0.0;
    default:
      break;
  }
  throw Error("cannot read elements of type " + std::string(dtype_name(t.dtype)));
}

void store_from_double(const Tensor& t, int64_t i, double v) {
  switch (t.dtype) {
    case DType::kFloat32:
      static_cast<float*>(t.data)[i] = static_cast<float>(v);
      return;
    case DType::kInt32:
      static_cast<int32_t*>(t.data)[i] = static_cast<int32_t>(v);
      return;
    case DType::kInt64:
      static_cast<int64_t*>(t.data)[i] = static_cast<int64_t>(v);
      return;
    case DType::kUInt8:
      static_cast<uint8_t*>(t.data)[i] = static_cast<uint8_t>(v);
      return;
    case DType::kBool:
      static_cast<bool*>(t.data)[i] = v != 0;
      return;
    default:
      break;
  }
  throw Error("cannot write elements of type " + std::string(dtype_name(t.dtype)));
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C untouched only when beta == 1; do it here for every beta
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX ||
      ldc > INT32_MAX)
    throw Error("matrix too large for 32-bit BLAS");
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  const int la = static_cast<int>(std::max<int64_t>(lda, 1)),
            lb = static_cast<int>(std::max<int64_t>(ldb, 1)),
            lc = static_cast<int>(std::max<int64_t>(ldc, 1));
  sgemm_(&tb, &ta, &ni, &mi, &ki, &alpha, b, &lb, a, &la, &beta, c, &lc);
}

}  // namespace planner::rt::kernels
