// Shrinking a model's dimensions: shapes, extent-valued constants and recurrent hidden sizes
// mapped on the ONNX model; tensors with values cut to their leading block.
#include "importers/shrink.h"

#include <cstring>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

namespace planner::importers {
namespace {

using Map = std::map<int64_t, int64_t>;

int64_t mapped(const Map& dims, int64_t v) {
  auto it = dims.find(v);
  return it == dims.end() ? v : it->second;
}

void map_shape(onnx::ValueInfoProto& vi, const Map& dims) {
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
  for (auto& d : *vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
    if (d.has_dim_value()) d.set_dim_value(mapped(dims, d.dim_value()));
}

// Bytes per element of raw_data, 0 when unknown (strings).
size_t element_size(int32_t type) {
  switch (type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX64:
      return 8;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      return 1;
    case onnx::TensorProto::COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

// Row-major indices, in the old shape, of the elements of the leading `to` block.
std::vector<int64_t> leading_block(const std::vector<int64_t>& from,
                                   const std::vector<int64_t>& to) {
  int64_t n = 1;
  for (int64_t d : to) n *= d;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  std::vector<int64_t> idx(to.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t src = 0;
    for (size_t d = 0; d < to.size(); ++d) src = src * from[d] + idx[d];
    out.push_back(src);
    for (size_t d = to.size(); d-- > 0;) {
      if (++idx[d] < to[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

template <typename Field>
void take(Field& field, const std::vector<int64_t>& at) {
  if (field.empty()) return;
  Field kept;
  for (int64_t i : at) *kept.Add() = field.Get(static_cast<int>(i));
  field.Swap(&kept);
}

template <typename T>
void take(google::protobuf::RepeatedField<T>& field, const std::vector<int64_t>& at) {
  if (field.empty()) return;
  google::protobuf::RepeatedField<T> kept;
  for (int64_t i : at) kept.Add(field.Get(static_cast<int>(i)));
  field.Swap(&kept);
}

bool has_values(const onnx::TensorProto& t) {
  return t.has_raw_data() || t.float_data_size() || t.int32_data_size() || t.int64_data_size() ||
         t.double_data_size() || t.uint64_data_size() || t.string_data_size();
}

// Maps the values of an integer tensor holding extents (a shape, split sizes).
void map_values(onnx::TensorProto& t, const Map& dims) {
  if (t.data_type() == onnx::TensorProto::INT64 && t.has_raw_data()) {
    std::string raw = t.raw_data();
    for (size_t i = 0; i + 8 <= raw.size(); i += 8) {
      int64_t v = 0;
      std::memcpy(&v, raw.data() + i, 8);
      v = mapped(dims, v);
      std::memcpy(raw.data() + i, &v, 8);
    }
    t.set_raw_data(raw);
  } else if (t.data_type() == onnx::TensorProto::INT32 && t.has_raw_data()) {
    std::string raw = t.raw_data();
    for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
      int32_t v = 0;
      std::memcpy(&v, raw.data() + i, 4);
      v = static_cast<int32_t>(mapped(dims, v));
      std::memcpy(raw.data() + i, &v, 4);
    }
    t.set_raw_data(raw);
  }
  for (auto& v : *t.mutable_int64_data()) v = mapped(dims, v);
  for (auto& v : *t.mutable_int32_data()) v = static_cast<int32_t>(mapped(dims, v));
}

// New dims for a tensor; values cut to the leading block, or dropped when stored outside.
Expected<void> shrink_tensor(onnx::TensorProto& t, const Map& dims, bool extents,
                             const std::string& what) {
  // Its own length is a rank, not an extent.
  if (extents) {
    map_values(t, dims);
    return ok();
  }
  std::vector<int64_t> from(t.dims().begin(), t.dims().end()), to = from;
  for (int64_t& d : to) d = mapped(dims, d);
  if (to == from) return ok();
  for (size_t d = 0; d < to.size(); ++d) t.set_dims(static_cast<int>(d), to[d]);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    t.clear_external_data();
    t.clear_data_location();
    return ok();
  }
  if (!has_values(t)) return ok();
  for (size_t d = 0; d < to.size(); ++d)
    if (to[d] > from[d])
      return make_error("{}: cannot grow dimension {} from {} to {}: it holds values", what, d,
                        from[d], to[d]);
  const std::vector<int64_t> at = leading_block(from, to);
  if (t.has_raw_data()) {
    const size_t es = element_size(t.data_type());
    if (es == 0) return make_error("{}: cannot shrink values of ONNX type {}", what, t.data_type());
    const std::string& raw = t.raw_data();
    std::string kept(at.size() * es, '\0');
    for (size_t i = 0; i < at.size(); ++i) {
      size_t src = static_cast<size_t>(at[i]) * es;
      if (src + es > raw.size()) return make_error("{}: raw data is shorter than its shape", what);
      std::memcpy(kept.data() + i * es, raw.data() + src, es);
    }
    t.set_raw_data(kept);
    return ok();
  }
  // Typed fields hold one value per element (two for complex types, which are not shrunk).
  if (t.data_type() == onnx::TensorProto::COMPLEX64 ||
      t.data_type() == onnx::TensorProto::COMPLEX128)
    return make_error("{}: cannot shrink complex values", what);
  int64_t count = 1;
  for (int64_t d : from) count *= d;
  for (int size : {t.float_data_size(), t.int32_data_size(), t.int64_data_size(),
                   t.double_data_size(), t.uint64_data_size(), t.string_data_size()})
    if (size != 0 && size != count)
      return make_error("{}: holds {} values for {} elements", what, size, count);
  take(*t.mutable_float_data(), at);
  take(*t.mutable_int32_data(), at);
  take(*t.mutable_int64_data(), at);
  take(*t.mutable_double_data(), at);
  take(*t.mutable_uint64_data(), at);
  take(*t.mutable_string_data(), at);
  return ok();
}

}  // namespace

Expected<void> shrink_model(onnx::ModelProto& model, const std::map<int64_t, int64_t>& dims,
                            const std::string& source) {
  if (dims.empty()) return ok();
  for (const auto& [from, to] : dims)
    if (from <= 0 || to <= 0)
      return make_error("{}: --shrink {}={}: dimensions must be positive", source, from, to);
  onnx::GraphProto& g = *model.mutable_graph();

  // Tensors whose values are extents.
  std::set<std::string> extents;
  for (const auto& n : g.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    const std::string& op = n.op_type();
    if ((op == "Reshape" || op == "Expand" || op == "Split") && n.input_size() > 1)
      extents.insert(n.input(1));
    if (op == "ConstantOfShape" && n.input_size() > 0) extents.insert(n.input(0));
  }

  g.clear_value_info();
  for (auto& vi : *g.mutable_input()) map_shape(vi, dims);
  for (auto& vi : *g.mutable_output()) map_shape(vi, dims);
  for (auto& t : *g.mutable_initializer())
    PLANNER_TRY(shrink_tensor(t, dims, extents.count(t.name()) > 0,
                              fmt::format("{}: initializer '{}'", source, t.name())));
  for (auto& n : *g.mutable_node()) {
    const bool onnx_domain = n.domain().empty() || n.domain() == "ai.onnx";
    const std::string& op = n.op_type();
    const bool extent_output = n.output_size() > 0 && extents.count(n.output(0)) > 0;
    for (auto& a : *n.mutable_attribute()) {
      if (op == "Constant" && onnx_domain && a.name() == "value" && a.has_t()) {
        PLANNER_TRY(shrink_tensor(*a.mutable_t(), dims, extent_output,
                                  fmt::format("{}: node '{}' (Constant)", source, n.name())));
      } else if (op == "Constant" && onnx_domain && extent_output && a.name() == "value_ints") {
        for (auto& v : *a.mutable_ints()) v = mapped(dims, v);
      } else if (op == "Constant" && onnx_domain && extent_output && a.name() == "value_int") {
        a.set_i(mapped(dims, a.i()));
      } else if (onnx_domain && (op == "LSTM" || op == "GRU" || op == "RNN") &&
                 a.name() == "hidden_size") {
        a.set_i(mapped(dims, a.i()));
      } else if (onnx_domain && (op == "Conv" || op == "ConvTranspose") && a.name() == "group" &&
                 a.i() > 1) {
        a.set_i(mapped(dims, a.i()));  // depthwise and grouped convolutions keep their form
      } else if (onnx_domain && op == "Split" && a.name() == "split") {
        for (auto& v : *a.mutable_ints()) v = mapped(dims, v);
      }
    }
  }
  return ok();
}

}  // namespace planner::importers
