// ONNX import: parse (protobuf or text), check versions, bind dynamic dimensions, build the IR,
// run ONNX shape inference, fold constants and complete shapes, optionally read weights.
#include "importers/onnx_import.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "importers/fold_constants.h"
#include "importers/fuse_layer_norm.h"
#include "importers/lower_ops.h"
#include "importers/onnx_checks.h"
#include "importers/opset18.h"
#include "importers/shape_rules.h"
#include "importers/shrink.h"
#include "importers/training_ops.h"
#include "importers/unflatten_linear.h"
#include "support/input_file.h"

namespace planner::importers {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMinIrVersion = 3;
constexpr int64_t kMaxIrVersion = onnx::IR_VERSION;  // 8 for ONNX 1.12
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 18;  // 18 through importers/opset18.h

std::string lower_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  while (!s.empty() && (s.back() == '.' || std::isspace(static_cast<unsigned char>(s.back()))))
    s.pop_back();
  return s;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading files

// Checks that `path` names a non-empty regular file (support's check every input file gets;
// the size bound of binary models is protobuf's, below); returns its size.
Expected<int64_t> check_model_file(const std::string& path) {
  PLANNER_TRY_ASSIGN(int64_t size,
                     check_input_file(path, "model file", std::numeric_limits<int64_t>::max()));
  if (size == 0) return make_error("{}: file is empty", path);
  return size;
}

// After a failed parse, walks the top-level fields to tell a truncated file from one that is not
// a protobuf at all: a truncated export ends inside its (large) graph field.
Error diagnose_parse_failure(const std::string& path, int64_t size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("{}: is not a valid ONNX model (protobuf parsing failed)", path);
  google::protobuf::io::FileInputStream file(fd);
  file.SetCloseOnDelete(true);
  google::protobuf::io::CodedInputStream in(&file);
  in.SetTotalBytesLimit(INT_MAX);
  using WireType = google::protobuf::internal::WireFormatLite::WireType;
  while (true) {
    int64_t at = in.CurrentPosition();
    uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (at >= size) break;  // every top-level field is complete: the damage is deeper
      return make_error("{}: is not an ONNX model: not a protobuf file (bad field at byte {})",
                        path, at);
    }
    auto wire = static_cast<WireType>(tag & 7);
    bool truncated = false;
    switch (wire) {
      case WireType::WIRETYPE_VARINT: {
        uint64_t v;
        truncated = !in.ReadVarint64(&v);
        break;
      }
      case WireType::WIRETYPE_FIXED64:
        truncated = !in.Skip(8);
        break;
      case WireType::WIRETYPE_FIXED32:
        truncated = !in.Skip(4);
        break;
      case WireType::WIRETYPE_LENGTH_DELIMITED: {
        uint32_t length = 0;
        if (!in.ReadVarint32(&length)) {
          truncated = true;
          break;
        }
        if (in.CurrentPosition() + static_cast<int64_t>(length) > size) {
          return make_error(
              "{}: file is truncated: a field at byte {} needs {} bytes but the file ends at "
              "byte {}",
              path, at, length, size);
        }
        truncated = !in.Skip(static_cast<int>(length));
        break;
      }
      default:
        return make_error("{}: is not an ONNX model: not a protobuf file (bad field at byte {})",
                          path, at);
    }
    if (truncated) return make_error("{}: file is truncated at byte {}", path, size);
  }
  return make_error("{}: is not a valid ONNX model (protobuf parsing failed)", path);
}

Expected<onnx::ModelProto> parse_binary(const std::string& path) {
  PLANNER_TRY_ASSIGN(int64_t size, check_model_file(path));
  if (size >= INT_MAX)
    return make_error(
        "{}: file is {} bytes; protobuf models must be under 2 GiB (store the "
        "weights as external data)",
        path, size);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("{}: cannot open: {}", path, std::strerror(errno));
  onnx::ModelProto model;
  bool parsed = false;
  {
    // Parse straight from the file descriptor: no intermediate copy of the file.
    google::protobuf::io::FileInputStream file(fd);
    file.SetCloseOnDelete(true);
    google::protobuf::io::CodedInputStream in(&file);
    in.SetTotalBytesLimit(INT_MAX);
    parsed = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  }
  if (!parsed) return diagnose_parse_failure(path, size);
  if (!model.has_graph()) return make_error("{}: is not an ONNX model (it has no graph)", path);
  return model;
}

// "[ParseError at position (line: 3 column: 14)]\nError context: ...\nExpected ..." -> one line.
Error parse_error_line(const std::string& source, const std::string& message) {
  int line = 0, column = 0;
  std::string context, what = message;
  if (std::sscanf(message.c_str(), "[ParseError at position (line: %d column: %d)]", &line,
                  &column) == 2) {
    std::istringstream lines(message);
    std::string first, ctx, rest, l;
    std::getline(lines, first);
    std::getline(lines, ctx);
    while (std::getline(lines, l)) rest += (rest.empty() ? "" : " ") + l;
    const std::string prefix = "Error context: ";
    if (ctx.rfind(prefix, 0) == 0) ctx = ctx.substr(prefix.size());
    while (!ctx.empty() && std::isspace(static_cast<unsigned char>(ctx.front()))) ctx.erase(0, 1);
    return make_error("{}:{}:{}: {} (in '{}')", source, line, column, lower_first(rest), ctx);
  }
  std::replace(what.begin(), what.end(), '\n', ' ');
  return make_error("{}: cannot parse the model text: {}", source, lower_first(what));
}

Expected<onnx::ModelProto> parse_text(const std::string& text, const std::string& source) {
  PLANNER_TRY(check_model_text(text, source));
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return std::isspace(static_cast<unsigned char>(c)); }))
    return make_error("{}: file is empty", source);
  onnx::ModelProto model;
  try {
    onnx::OnnxParser parser(text.c_str());
    auto status = parser.Parse(model);
    if (!status.IsOK()) return parse_error_line(source, status.ErrorMessage());
  } catch (const std::exception& e) {
    return make_error("{}: cannot parse the model text: {}", source, lower_first(e.what()));
  }
  // The textual syntax may leave the IR version out; it then means the current one.
  if (model.ir_version() == 0) model.set_ir_version(kMaxIrVersion);
  return model;
}

// ---------------------------------------------------------------------------------------------
// Checks on the model proto before building the graph

Expected<int64_t> check_versions(const onnx::ModelProto& model, const std::string& source) {
  int64_t ir = model.ir_version();
  if (ir < kMinIrVersion || ir > kMaxIrVersion)
    return make_error("{}: unsupported IR version {} (supported: {} to {})", source, ir,
                      kMinIrVersion, kMaxIrVersion);
  std::optional<int64_t> opset;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (!opset)
    return make_error("{}: the model imports no opset of the default ONNX domain", source);
  if (*opset < kMinOpset || *opset > kMaxOpset)
    return make_error("{}: unsupported opset version {} (supported: {} to {})", source, *opset,
                      kMinOpset, kMaxOpset);
  return *opset;
}

bool is_batch_name(const std::string& name, int axis) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::set<std::string> kNames = {"batch", "batch_size", "batchsize", "bs",       "n",
                                               "b",     "nbatch",     "n_batch",   "num_batch"};
  if (kNames.count(n)) return true;
  return axis == 0 && (n.empty() || n.rfind("unk__", 0) == 0 || n.rfind("batch", 0) == 0);
}

// Whether a graph input has a dynamic dimension --batch binds (named like a batch, or unnamed
// on axis 0); collects the names of the dynamic dimensions for the error when none is.
bool has_batch_dimension(const onnx::GraphProto& graph, const std::set<std::string>& initializers,
                         std::vector<std::string>& dynamic) {
  bool found = false;
  for (const auto& vi : graph.input()) {
    if (initializers.count(vi.name()) || !vi.type().has_tensor_type() ||
        !vi.type().tensor_type().has_shape())
      continue;
    int axis = 0;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) {
        found |= is_batch_name(d.dim_param(), axis);
        if (!d.dim_param().empty() &&
            std::find(dynamic.begin(), dynamic.end(), d.dim_param()) == dynamic.end())
          dynamic.push_back(d.dim_param());
      }
      ++axis;
    }
  }
  return found;
}

// Binds every dynamic dimension of the graph inputs from the options, and substitutes the
// bound names everywhere else they appear (outputs, value_info).
Expected<void> bind_dimensions(onnx::GraphProto& graph, const std::set<std::string>& initializers,
                               const ImportOptions& options, const std::string& source) {
  std::map<std::string, int64_t> bound = options.dims;
  std::set<std::string> names;
  for (const auto& vi : graph.input())
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      for (const auto& d : vi.type().tensor_type().shape().dim())
        if (d.has_dim_param()) names.insert(d.dim_param());
  for (const auto& [name, value] : options.dims) {
    if (names.count(name)) continue;
    std::vector<std::string> all(names.begin(), names.end());
    return make_error("{}: --dim {}={}: the model has no dynamic dimension named '{}' ({})", source,
                      name, value, name,
                      all.empty() ? "its inputs are static" : "it has " + quoted_list(all));
  }

  // --batch must bind something: on a model whose inputs have no dynamic batch dimension it
  // would silently change nothing, and the user would plan another batch than they asked for.
  std::vector<std::string> dynamic;
  const bool batch_binds = !options.batch || !options.batch_must_bind ||
                           has_batch_dimension(graph, initializers, dynamic);

  for (auto& vi : *graph.mutable_input()) {
    if (initializers.count(vi.name())) continue;
    if (!vi.type().has_tensor_type())
      return make_error(
          "{}: input '{}' is not a tensor (sequence, map and optional inputs are not "
          "supported)",
          source, vi.name());
    auto* tt = vi.mutable_type()->mutable_tensor_type();
    if (!tt->has_shape())
      return make_error(
          "{}: input '{}' has no shape (unknown rank): export the model with a "
          "shaped input",
          source, vi.name());
    std::vector<std::string> unbound;
    int axis = 0;
    for (auto& d : *tt->mutable_shape()->mutable_dim()) {
      if (!d.has_dim_value()) {
        std::string name = d.dim_param();
        auto it = bound.find(name);
        if (!name.empty() && it != bound.end()) {
          d.set_dim_value(it->second);
        } else if (options.batch && is_batch_name(name, axis)) {
          d.set_dim_value(*options.batch);
          if (!name.empty()) bound.emplace(name, *options.batch);
        } else if (name.empty()) {
          if (axis != 0)
            return make_error(
                "{}: input '{}' has an unnamed dynamic dimension at axis {}, which "
                "cannot be bound: export the model with a static or named "
                "dimension",
                source, vi.name(), axis);
          unbound.push_back("?");
        } else if (std::find(unbound.begin(), unbound.end(), name) == unbound.end()) {
          unbound.push_back(name);
        }
      }
      ++axis;
    }
    if (!unbound.empty())
      return make_error(
          "{}: input '{}' has dynamic dimension{} {}: bind {} with --batch N or "
          "--dim NAME=VALUE",
          source, vi.name(), unbound.size() > 1 ? "s" : "", quoted_list(unbound),
          unbound.size() > 1 ? "them" : "it");
  }
  // Reported after the per-input errors, which say more about a dimension left unbound.
  if (!batch_binds)
    return make_error(
        "{}: --batch {}: the model's inputs have no dynamic batch dimension to "
        "bind ({})",
        source, *options.batch,
        dynamic.empty() ? "its inputs are static"
                        : "its dynamic dimensions, " + quoted_list(dynamic) +
                              ", are not named like a batch: bind them with "
                              "--dim NAME=VALUE");

  auto substitute = [&](onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    for (auto& d : *vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!d.has_dim_param()) continue;
      auto it = bound.find(d.dim_param());
      if (it != bound.end()) d.set_dim_value(it->second);
    }
  };
  for (auto& vi : *graph.mutable_output()) substitute(vi);
  for (auto& vi : *graph.mutable_value_info()) substitute(vi);
  return ok();
}

// ---------------------------------------------------------------------------------------------
// Tensors

std::string onnx_type_name(int32_t code) {
  return onnx::TensorProto_DataType_IsValid(code)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code))
             : std::to_string(code);
}

Expected<ir::DType> dtype_of(int32_t code, const std::string& what) {
  auto d = ir::dtype_from_onnx(code);
  if (!d)
    return make_error("{} has unsupported element type {}", what,
                      lower_first(onnx_type_name(code)));
  return *d;
}

// Byte size of a shape, or nullopt when a dimension is negative or the size overflows (both
// reported later by Graph::finalize with the tensor's name).
std::optional<int64_t> byte_size(ir::DType dtype, const std::vector<int64_t>& shape) {
  __int128 n = ir::dtype_size(dtype);
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    n *= d;
    if (n > static_cast<__int128>(INT64_MAX)) return std::nullopt;
  }
  return static_cast<int64_t>(n);
}

// Where a tensor's external bytes are, with `location` checked to stay inside the model folder.
Expected<ir::ExternalData> external_data_of(const onnx::TensorProto& t) {
  ir::ExternalData ext;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location")
        ext.location = kv.value();
      else if (kv.key() == "offset")
        ext.offset = std::stoll(kv.value());
      else if (kv.key() == "length")
        ext.length = std::stoll(kv.value());
    } catch (const std::exception&) {
      return make_error("tensor '{}': external data {} '{}' is not a number", t.name(), kv.key(),
                        kv.value());
    }
  }
  if (ext.location.empty())
    return make_error("tensor '{}': external data has no location", t.name());
  fs::path loc(ext.location);
  fs::path normal = loc.lexically_normal();
  bool escapes = loc.is_absolute() || loc.has_root_path() || normal.empty() ||
                 (normal.begin() != normal.end() && *normal.begin() == "..");
  if (escapes)
    return make_error("tensor '{}': external data location '{}' is outside the model's folder",
                      t.name(), ext.location);
  if (ext.offset < 0 || ext.length < -1)
    return make_error("tensor '{}': external data has a negative offset or length", t.name());
  return ext;
}

// Reads a tensor's bytes from its external data file (location already checked).
Expected<std::vector<uint8_t>> read_external(const fs::path& base, const ir::ExternalData& ext,
                                             int64_t expected, const std::string& name) {
  fs::path file = base / ext.location;
  // A symbolic link inside the folder must not lead outside it either.
  std::error_code ec;
  fs::path real = fs::weakly_canonical(file, ec);
  fs::path real_base = fs::weakly_canonical(base.empty() ? fs::path(".") : base, ec);
  auto [mismatch, _] = std::mismatch(real_base.begin(), real_base.end(), real.begin(), real.end());
  if (mismatch != real_base.end())
    return make_error("tensor '{}': external data location '{}' is outside the model's folder",
                      name, ext.location);
  // Non-blocking, then checked: a FIFO or device planted as the data file must be refused at
  // once, never waited on or read without end.
  int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return make_error("tensor '{}': cannot open external data file '{}': {}", name, ext.location,
                      std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return make_error("tensor '{}': cannot read external data file '{}': {}", name, ext.location,
                      std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return make_error("tensor '{}': external data file '{}' is not a regular file", name,
                      ext.location);
  const int64_t file_size = static_cast<int64_t>(st.st_size);
  int64_t length = ext.length >= 0 ? ext.length : file_size - ext.offset;
  if (length != expected)
    return make_error("tensor '{}': external data has {} bytes, its shape needs {}", name, length,
                      expected);
  int64_t end = 0;
  if (__builtin_add_overflow(ext.offset, length, &end) || end > file_size)
    return make_error(
        "tensor '{}': external data file '{}' is too short ({} bytes; needs {} at "
        "offset {})",
        name, ext.location, file_size, length, ext.offset);
  std::vector<uint8_t> data(static_cast<size_t>(length));
  for (size_t done = 0; done < data.size();) {
    ssize_t n = ::pread(fd, data.data() + done, data.size() - done,
                        static_cast<off_t>(ext.offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return make_error("tensor '{}': cannot read external data file '{}'", name, ext.location);
    done += static_cast<size_t>(n);
  }
  return data;
}

template <typename Src>
void narrow_copy(const Src& values, ir::DType dtype, std::vector<uint8_t>& out) {
  size_t es = static_cast<size_t>(ir::dtype_size(dtype));
  out.resize(static_cast<size_t>(values.size()) * es);
  for (int i = 0; i < values.size(); ++i) {
    auto v = values.Get(i);
    // Little-endian: the low `es` bytes hold the narrower value (f16 bits, int8, bool, ...).
    std::memcpy(out.data() + static_cast<size_t>(i) * es, &v, es);
  }
}

// The inline bytes of a tensor proto in little-endian `dtype` layout; empty when it has none
// (a shape-only declaration, allowed in ONNX's textual syntax).
Expected<std::vector<uint8_t>> inline_bytes(const onnx::TensorProto& t, ir::DType dtype,
                                            int64_t expected_bytes) {
  std::vector<uint8_t> out;
  if (dtype == ir::DType::kString) return out;
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    out.assign(raw.begin(), raw.end());
  } else {
    switch (dtype) {
      case ir::DType::kFloat32:
        narrow_copy(t.float_data(), dtype, out);
        break;
      case ir::DType::kFloat64:
        narrow_copy(t.double_data(), dtype, out);
        break;
      case ir::DType::kInt64:
        narrow_copy(t.int64_data(), dtype, out);
        break;
      case ir::DType::kUInt32:
      case ir::DType::kUInt64:
        narrow_copy(t.uint64_data(), dtype, out);
        break;
      default:
        narrow_copy(t.int32_data(), dtype, out);
        break;
    }
  }
  if (!out.empty() && static_cast<int64_t>(out.size()) != expected_bytes)
    return make_error("tensor '{}' has {} bytes of data for its shape, which needs {}", t.name(),
                      out.size(), expected_bytes);
  return out;
}

// An ir::Tensor from a tensor proto: dtype, shape, external location, and inline values when
// `with_data`.
Expected<ir::Tensor> convert_tensor(const onnx::TensorProto& t, bool with_data) {
  ir::Tensor out;
  out.name = t.name();
  PLANNER_TRY_ASSIGN(out.dtype, dtype_of(t.data_type(), fmt::format("tensor '{}'", t.name())));
  out.shape.assign(t.dims().begin(), t.dims().end());
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    PLANNER_TRY_ASSIGN(out.external, external_data_of(t));
    return out;
  }
  auto bytes = byte_size(out.dtype, out.shape);
  if (with_data && bytes) {
    PLANNER_TRY_ASSIGN(out.data, inline_bytes(t, out.dtype, *bytes));
  }
  return out;
}

std::vector<int64_t> dims_of(const onnx::TensorShapeProto& shape) {
  std::vector<int64_t> dims;
  for (const auto& d : shape.dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : kUnknownDim);
  return dims;
}

PartialType partial_type_of(const onnx::TypeProto& type) {
  PartialType p;
  if (!type.has_tensor_type()) return p;
  const auto& tt = type.tensor_type();
  if (tt.elem_type() != 0) p.dtype = ir::dtype_from_onnx(tt.elem_type());
  if (tt.has_shape()) p.dims = dims_of(tt.shape());
  return p;
}

// ---------------------------------------------------------------------------------------------
// Graph construction

Expected<ir::Attribute> convert_attribute(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  auto type = a.type();
  if (type == A::UNDEFINED) {  // very old exporters leave the type out
    if (a.has_f())
      type = A::FLOAT;
    else if (a.has_i())
      type = A::INT;
    else if (a.has_s())
      type = A::STRING;
    else if (a.has_t())
      type = A::TENSOR;
    else if (a.has_g())
      type = A::GRAPH;
    else if (a.floats_size())
      type = A::FLOATS;
    else if (a.ints_size())
      type = A::INTS;
    else if (a.strings_size())
      type = A::STRINGS;
  }
  switch (type) {
    case A::FLOAT:
      return ir::Attribute{static_cast<double>(a.f())};
    case A::INT:
      return ir::Attribute{static_cast<int64_t>(a.i())};
    case A::STRING:
      return ir::Attribute{a.s()};
    case A::FLOATS:
      return ir::Attribute{std::vector<double>(a.floats().begin(), a.floats().end())};
    case A::INTS:
      return ir::Attribute{std::vector<int64_t>(a.ints().begin(), a.ints().end())};
    case A::STRINGS:
      return ir::Attribute{std::vector<std::string>(a.strings().begin(), a.strings().end())};
    case A::TENSOR: {
      PLANNER_TRY_ASSIGN(ir::Tensor t, convert_tensor(a.t(), /*with_data=*/true));
      t.role = ir::TensorRole::kConstant;
      return ir::Attribute{std::make_shared<const ir::Tensor>(std::move(t))};
    }
    case A::GRAPH:
    case A::GRAPHS:
      return make_error(
          "attribute '{}' holds a subgraph: control flow (If, Loop, Scan) is not "
          "supported",
          a.name());
    default:
      return make_error("attribute '{}' has unsupported type {}", a.name(),
                        lower_first(A::AttributeType_Name(type)));
  }
}

struct Builder {
  onnx::ModelProto& model;
  const std::string& source;
  int64_t opset;
  const ImportOptions& options;
  ir::Graph graph;
  std::unordered_map<std::string, const onnx::TensorProto*> initializer_protos;

  Error at_node(const std::string& name, const onnx::NodeProto& n, const Error& e) const {
    std::string type = n.domain().empty() || n.domain() == "ai.onnx"
                           ? n.op_type()
                           : n.domain() + "." + n.op_type();
    return e.with_context(fmt::format("node '{}' ({})", name, type)).with_context(source);
  }

  ir::TensorId tensor_ref(const std::string& name) {
    if (auto id = graph.find_tensor(name)) return *id;
    ir::Tensor t;
    t.name = name;
    return graph.add_tensor(std::move(t));  // an activation; its type comes from inference
  }

  Expected<void> add_initializers() {
    const onnx::GraphProto& g = model.graph();
    if (g.sparse_initializer_size() > 0)
      return make_error("{}: sparse initializers are not supported", source);
    for (const auto& init : g.initializer()) {
      if (graph.find_tensor(init.name()))
        return make_error("{}: duplicate initializer name '{}'", source, init.name());
      if (init.name().empty()) return make_error("{}: an initializer has no name", source);
      auto dtype = dtype_of(init.data_type(), fmt::format("initializer '{}'", init.name()));
      if (!dtype) return dtype.error().with_context(source);
      // Floating initializers are trainable weights; integer and bool ones are shape vectors,
      // indices and masks whose (small, inline) values folding needs.
      bool parameter = ir::is_floating(*dtype);
      auto t = convert_tensor(init, /*with_data=*/!parameter);
      if (!t) return t.error().with_context(source);
      t->role = parameter ? ir::TensorRole::kParameter : ir::TensorRole::kConstant;
      initializer_protos[init.name()] = &init;
      graph.add_tensor(std::move(*t));
    }
    return ok();
  }

  Expected<void> add_inputs() {
    for (const auto& vi : model.graph().input()) {
      if (initializer_protos.count(vi.name())) continue;  // IR < 4 lists initializers as inputs
      if (graph.find_tensor(vi.name()))
        return make_error("{}: duplicate graph input name '{}'", source, vi.name());
      ir::Tensor t;
      t.name = vi.name();
      t.role = ir::TensorRole::kInput;
      auto dtype =
          dtype_of(vi.type().tensor_type().elem_type(), fmt::format("input '{}'", vi.name()));
      if (!dtype) return dtype.error().with_context(source);
      t.dtype = *dtype;
      t.shape = dims_of(vi.type().tensor_type().shape());
      graph.inputs.push_back(graph.add_tensor(std::move(t)));
    }
    return ok();
  }

  // Input and output counts within the schema's bounds, as ONNX's checker demands: every later
  // stage indexes a node's operands by position (a Where with two inputs, a Constant with twenty
  // outputs were fuzz findings that read past the end).
  Expected<void> check_arity(const onnx::OpSchema& schema, const onnx::NodeProto& n,
                             const std::string& name) {
    auto range = [](int lo, int hi) {
      return lo == hi                                ? fmt::format("{}", lo)
             : hi == std::numeric_limits<int>::max() ? fmt::format("at least {}", lo)
                                                     : fmt::format("{} to {}", lo, hi);
    };
    if (n.input_size() < schema.min_input() || n.input_size() > schema.max_input())
      return at_node(name, n,
                     make_error("{} has {} inputs; opset {} takes {}", n.op_type(), n.input_size(),
                                opset, range(schema.min_input(), schema.max_input())));
    if (n.output_size() < schema.min_output() || n.output_size() > schema.max_output())
      return at_node(
          name, n,
          make_error("{} has {} outputs; opset {} gives {}", n.op_type(), n.output_size(), opset,
                     range(schema.min_output(), schema.max_output())));
    return ok();
  }

  Expected<void> add_nodes() {
    const auto& nodes = model.graph().node();
    std::unordered_set<std::string> given;
    for (const auto& n : nodes)
      if (!n.name().empty()) given.insert(n.name());
    std::unordered_set<std::string> generated;
    const auto* registry = onnx::OpSchemaRegistry::Instance();
    for (int i = 0; i < nodes.size(); ++i) {
      const onnx::NodeProto& n = nodes.Get(i);
      std::string name = n.name();
      if (name.empty()) {
        // Deterministic names by model position; skip over names the model already uses.
        name = fmt::format("{}_{}", n.op_type(), i);
        while (given.count(name) || generated.count(name)) name += "_";
        generated.insert(name);
      }
      if (n.op_type().empty())
        return make_error("{}: node '{}' has no operator type", source, name);
      bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
      const onnx::OpSchema* schema =
          default_domain ? registry->GetSchema(n.op_type(), static_cast<int>(opset), "") : nullptr;
      if (default_domain && !schema)
        return at_node(name, n,
                       make_error("unknown operator '{}' in opset {}", n.op_type(), opset));
      if (schema) PLANNER_TRY(check_arity(*schema, n, name));
      ir::Op op;
      op.name = name;
      op.op_type = n.op_type();
      op.domain = default_domain ? "" : n.domain();
      for (const auto& a : n.attribute()) {
        if (!a.ref_attr_name().empty()) continue;  // only meaningful inside functions
        auto attr = convert_attribute(a);
        if (!attr) return at_node(name, n, attr.error());
        op.attributes[a.name()] = std::move(*attr);
      }
      for (const auto& in : n.input())
        op.inputs.push_back(in.empty() ? ir::kNoTensor : tensor_ref(in));
      for (const auto& out : n.output())
        op.outputs.push_back(out.empty() ? ir::kNoTensor : tensor_ref(out));
      graph.add_op(std::move(op));
    }
    for (const auto& vi : model.graph().output()) graph.outputs.push_back(tensor_ref(vi.name()));
    return ok();
  }
};

// ONNX reports node failures as "(op_type:X, node name: Y): [ShapeInferenceError] message";
// unnamed nodes carry only the op type, so find the first such node inference gave up on.
// `op_at[i]` is the op of the node at position i of the (sorted) graph proto.
Error shape_inference_error(const std::string& what, const onnx::ModelProto& model,
                            const ir::Graph& graph, const std::vector<ir::OpId>& op_at,
                            const std::string& source) {
  std::string text = what;
  std::string op_type, node_name, message = text;
  auto at = text.find("(op_type:");
  if (at != std::string::npos) {
    auto close = text.find("):", at);
    std::string head = text.substr(at + 9, close == std::string::npos ? 0 : close - at - 9);
    auto comma = head.find(", node name: ");
    op_type = head.substr(0, comma);
    if (comma != std::string::npos) node_name = head.substr(comma + 13);
    message = close == std::string::npos ? "" : text.substr(close + 2);
  }
  message = message.substr(0, message.find('\n'));
  // Drop the "[ShapeInferenceError]"-style tags.
  while (true) {
    auto l = message.find_first_not_of(' ');
    message = l == std::string::npos ? "" : message.substr(l);
    if (message.empty() || message[0] != '[') break;
    auto r = message.find(']');
    if (r == std::string::npos) break;
    message = message.substr(r + 1);
  }
  if (node_name.empty() && !op_type.empty()) {
    std::unordered_set<std::string> typed;
    for (const auto& vi : model.graph().value_info()) typed.insert(vi.name());
    for (const auto& vi : model.graph().input()) typed.insert(vi.name());
    const auto& nodes = model.graph().node();
    for (int i = 0; i < nodes.size() && node_name.empty(); ++i) {
      const auto& n = nodes.Get(i);
      if (n.op_type() != op_type) continue;
      bool missing = n.output_size() > 0 && !typed.count(n.output(0));
      if (missing) node_name = graph.op(op_at[static_cast<size_t>(i)]).name;
    }
  }
  if (!node_name.empty())
    return make_error("{}: node '{}' ({}): shape inference failed: {}", source, node_name, op_type,
                      lower_first(message));
  std::replace(text.begin(), text.end(), '\n', ' ');
  return make_error("{}: shape inference failed: {}", source, lower_first(text));
}

// Compares the computed output shapes with what the model declares for its graph outputs.
Expected<void> check_declared_outputs(const ir::Graph& graph,
                                      const std::unordered_map<std::string, PartialType>& declared,
                                      const std::string& source) {
  for (ir::TensorId id : graph.outputs) {
    const ir::Tensor& t = graph.tensor(id);
    auto it = declared.find(t.name);
    if (it == declared.end() || !it->second.dims) continue;
    const auto& want = *it->second.dims;
    bool agree = want.size() == t.shape.size();
    for (size_t i = 0; agree && i < want.size(); ++i) agree = want[i] < 0 || want[i] == t.shape[i];
    if (!agree)
      return make_error("{}: graph output '{}' is declared with shape {} but computes {}", source,
                        t.name, ir::shape_to_string(want), ir::shape_to_string(t.shape));
  }
  return ok();
}

Expected<ir::Graph> import_proto(onnx::ModelProto& model, const std::string& source,
                                 const fs::path& base_dir, const ImportOptions& options) {
  PLANNER_TRY_ASSIGN(int64_t opset, check_versions(model, source));
  if (opset == 18) {  // ONNX 1.12 knows schemas up to 17: the same computation at 17
    PLANNER_TRY(downgrade_opset18(model, source));
    opset = 17;
  }
  PLANNER_TRY(shrink_model(model, options.shrink, source));
  onnx::GraphProto& g = *model.mutable_graph();
  std::set<std::string> initializer_names;
  for (const auto& init : g.initializer()) initializer_names.insert(init.name());
  PLANNER_TRY(bind_dimensions(g, initializer_names, options, source));

  Builder b{model, source, opset, options, {}, {}};
  b.graph.name = g.name().empty() ? fs::path(source).stem().string() : g.name();
  PLANNER_TRY(b.add_initializers());
  PLANNER_TRY(b.add_inputs());
  PLANNER_TRY(b.add_nodes());
  ir::Graph& graph = b.graph;
  // Structure first (cycles, undefined inputs, duplicates, bad dimensions): ONNX shape
  // inference would trip over those with less helpful messages.
  PLANNER_TRY(graph.finalize(source));

  // What the model declares; kept aside so that stale or wrong value_info cannot conflict with
  // inference, and used only where neither ONNX nor the importer's rules can tell.
  std::unordered_map<std::string, PartialType> declared_by_name;
  for (const auto& vi : g.value_info()) declared_by_name[vi.name()] = partial_type_of(vi.type());
  for (const auto& vi : g.output()) declared_by_name[vi.name()] = partial_type_of(vi.type());
  g.clear_value_info();
  for (auto& vi : *g.mutable_output())
    if (vi.type().has_tensor_type()) vi.mutable_type()->mutable_tensor_type()->clear_shape();

  // ONNX's inference visits nodes in file order and needs it topological, which the format
  // requires but hand-edited models do not always honour: sort the nodes as the graph is.
  std::vector<ir::OpId> op_at(graph.topo_order().begin(), graph.topo_order().end());
  {
    std::vector<int> position(op_at.size()), holds(op_at.size());
    for (size_t i = 0; i < op_at.size(); ++i) position[i] = holds[i] = static_cast<int>(i);
    for (size_t p = 0; p < op_at.size(); ++p) {
      int from = position[static_cast<size_t>(op_at[p])];
      if (from == static_cast<int>(p)) continue;
      g.mutable_node()->SwapElements(static_cast<int>(p), from);
      std::swap(holds[p], holds[static_cast<size_t>(from)]);
      position[static_cast<size_t>(holds[p])] = static_cast<int>(p);
      position[static_cast<size_t>(holds[static_cast<size_t>(from)])] = from;
    }
  }

  // ONNX's inference would try to read external initializers whose values it wants (a
  // Reshape's shape) and fail; it sees them as inputs instead, and folding reads them if needed.
  {
    std::set<std::string> input_names;
    for (const auto& vi : g.input()) input_names.insert(vi.name());
    auto* inits = g.mutable_initializer();
    for (int i = inits->size() - 1; i >= 0; --i) {
      const onnx::TensorProto& t = inits->Get(i);
      if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
      if (!input_names.count(t.name())) {
        onnx::ValueInfoProto* vi = g.add_input();
        vi->set_name(t.name());
        auto* tt = vi->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(t.data_type());
        for (int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
      }
      b.initializer_protos.erase(t.name());
      inits->DeleteSubrange(i, 1);
    }
  }

  guard_shape_inference();
  try {
    // No data propagation: ONNX 1.12's propagators crash on integer arithmetic over shapes
    // (Shape -> Mod -> Trilu or Reshape: SIGSEGV). The importer's own constant folding and
    // shape rules (fold_constants.h) compute what it gave, with checked values.
    onnx::ShapeInferenceOptions si(/*check_type=*/false, /*error_mode=*/1,
                                   /*enable_data_propagation=*/false);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), si);
  } catch (const std::exception& e) {
    return shape_inference_error(e.what(), model, graph, op_at, source);
  }

  std::vector<PartialType> inferred(static_cast<size_t>(graph.num_tensors()));
  std::vector<PartialType> declared(inferred.size());
  auto record = [&](const onnx::ValueInfoProto& vi) {
    if (auto id = graph.find_tensor(vi.name()))
      inferred[static_cast<size_t>(*id)] = partial_type_of(vi.type());
  };
  for (const auto& vi : g.value_info()) record(vi);
  for (const auto& vi : g.output()) record(vi);
  for (const auto& [name, type] : declared_by_name)
    if (auto id = graph.find_tensor(name)) declared[static_cast<size_t>(*id)] = type;

  FoldOptions fold;
  fold.fold = options.fold_constants;
  fold.load_data = [&](ir::Tensor& t) -> Expected<void> {
    auto bytes = byte_size(t.dtype, t.shape);
    if (!bytes || !t.external) return ok();
    PLANNER_TRY_ASSIGN(t.data, read_external(base_dir, *t.external, *bytes, t.name));
    return ok();
  };
  PLANNER_TRY(fold_constants(graph, std::move(inferred), declared, fold, source));
  PLANNER_TRY(graph.finalize(source));
  PLANNER_TRY(check_declared_outputs(graph, declared_by_name, source));
  PLANNER_TRY(lower_training_ops(graph, source));
  PLANNER_TRY(lower_ops(graph, source));
  if (options.unflatten_linear) PLANNER_TRY(unflatten_linear(graph, source));
  if (options.fuse_layer_norm) PLANNER_TRY(fuse_layer_norm(graph, source));

  if (options.load_weights) {
    for (ir::TensorId id = 0; id < graph.num_tensors(); ++id) {
      ir::Tensor& t = graph.tensor(id);
      if (t.role != ir::TensorRole::kParameter && t.role != ir::TensorRole::kConstant) continue;
      if (t.has_data() || t.dtype == ir::DType::kString) continue;
      int64_t bytes = t.num_bytes();
      if (t.external) {
        auto data = read_external(base_dir, *t.external, bytes, t.name);
        if (!data) return data.error().with_context(source);
        t.data = std::move(*data);
      } else if (auto it = b.initializer_protos.find(t.name); it != b.initializer_protos.end()) {
        auto data = inline_bytes(*it->second, t.dtype, bytes);
        if (!data) return data.error().with_context(source);
        t.data = std::move(*data);
      }
    }
  }
  return std::move(graph);
}

bool is_text_path(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  return ext == ".onnxtxt" || ext == ".txt";
}

}  // namespace

Expected<ir::Graph> import_model(const std::string& path, const ImportOptions& options) {
  try {
    fs::path base = fs::path(path).parent_path();
    if (is_text_path(path)) {
      PLANNER_TRY(check_model_file(path));
      PLANNER_TRY_ASSIGN(std::string text, read_file(path, "model file"));
      PLANNER_TRY_ASSIGN(onnx::ModelProto model, parse_text(text, path));
      return import_proto(model, path, base, options);
    }
    PLANNER_TRY_ASSIGN(onnx::ModelProto model, parse_binary(path));
    return import_proto(model, path, base, options);
  } catch (const std::bad_alloc&) {
    return make_error("{}: out of memory while importing", path);
  } catch (const std::exception& e) {
    return make_error("{}: {}", path, lower_first(e.what()));
  }
}

Expected<ir::Graph> import_model_text(const std::string& text, const std::string& source_name,
                                      const ImportOptions& options) {
  try {
    PLANNER_TRY_ASSIGN(onnx::ModelProto model, parse_text(text, source_name));
    return import_proto(model, source_name, fs::path(source_name).parent_path(), options);
  } catch (const std::bad_alloc&) {
    return make_error("{}: out of memory while importing", source_name);
  } catch (const std::exception& e) {
    return make_error("{}: {}", source_name, lower_first(e.what()));
  }
}

Expected<ir::Tensor> read_tensor_file(const std::string& path) {
  try {
    PLANNER_TRY_ASSIGN(std::string bytes, read_file(path, "tensor file"));
    onnx::TensorProto t;
    if (!t.ParseFromString(bytes))
      return make_error("{}: is not an ONNX tensor (protobuf parsing failed)", path);
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      return make_error("{}: tensor '{}' keeps its data in another file", path, t.name());
    auto out = convert_tensor(t, /*with_data=*/true);
    if (!out) return out.error().with_context(path);
    if (out->num_elements() > 0 && !out->has_data())
      return make_error("{}: tensor '{}' holds no values", path, t.name());
    return out;
  } catch (const std::bad_alloc&) {
    return make_error("{}: out of memory while reading", path);
  }
}

}  // namespace planner::importers
